"""Screens: the main monitor, the planner, help, details."""
