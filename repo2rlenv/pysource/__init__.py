"""Facts about Python source that several rooms use (the pipeline, the solver): function extraction and
the code-context sections shown to a model. Imports nothing of the pipelines."""
