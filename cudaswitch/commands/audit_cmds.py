"""Commands registered on the typer app by cli.py (filled in by its issue)."""


def register(app):
    pass
