"""Configuration: runtime settings and the data catalog torchbot answers from."""
