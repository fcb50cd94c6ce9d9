"""The Textual app: the only package besides cli/ that imports textual. It imports nothing itself, so that a
module here that draws without Textual (fleet_history_view, for `fleet snapshot --history`) loads none."""
