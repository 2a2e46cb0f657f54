"""Command handlers: each takes the keyword arguments the command table declares, calls the core
and renders; the return value is the exit status. None of them imports typer."""
