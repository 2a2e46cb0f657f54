"""Where CUDA users already are: direnv, Jupyter kernels (the torch planner is verify/torchplan.py)."""
