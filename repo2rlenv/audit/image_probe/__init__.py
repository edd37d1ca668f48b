"""Payload (`payload.py`): the script the audit runs inside a task's image to look for leaks, shipped by
`audit.image.IMAGE_PROBE_PACKAGE`. Stdlib only."""
