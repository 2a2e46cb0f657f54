"""The command line: one command table, the fast parser and the typer app made from it, one error boundary."""
