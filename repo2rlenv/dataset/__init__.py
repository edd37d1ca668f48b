"""The dataset on disk: the task directory layout, the run manifest and the task.toml model. The Hub, the
solver and eval read datasets through these, never through pipeline code."""
