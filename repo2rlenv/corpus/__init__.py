"""Corpus runs: many repositories into one dataset, on this machine or on a Ray cluster.

```
<dataset>/
  tasks/<task_id>/            every repo's published tasks (the driver alone writes here)
  manifest.jsonl              one row per task, all repos (rebuilt from tasks/ on disk)
  summary.json                per repo: status, stage reached, funnel, emitted, cause of failure
  validation/<task_id>.json   validation records, as for one repo
  runs/<name>/                one repo's run: candidates.jsonl, summary.json, baseline.json, logs/
  .r2e-corpus/<key>.jsonl     the corpus journal: repos started (with their task budget) and finished
```

`entries` reads the list, `worker` runs one repo (the same `run_generate` as a single-repo run, into its
run folder), `executors` run workers here or on Ray, `publish` moves a finished run's tasks into the
dataset, `driver` ties them together and is the only writer of the dataset's shared files.
"""
