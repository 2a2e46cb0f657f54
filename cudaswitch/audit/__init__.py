"""Audits of a host, an image root or a cluster's merged reports."""
