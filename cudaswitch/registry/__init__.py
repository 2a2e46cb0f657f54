"""The registry: every toolkit on the host, from every source, cached; requests resolved against it."""
