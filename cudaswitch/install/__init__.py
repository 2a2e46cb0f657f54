"""Managed toolkits: installed without root from NVIDIA's wheels."""
