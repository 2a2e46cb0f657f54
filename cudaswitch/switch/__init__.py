"""Switching a shell or a project: the environment diff, views, project files, shell formats and hooks."""
