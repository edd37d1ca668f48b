"""Regenerate docs/options.md from the options model, so the docs can never drift from the code.

    python3 scripts/gen_options_doc.py          # rewrite docs/options.md
    python3 scripts/gen_options_doc.py --check  # exit 1 when docs/options.md is stale (a test runs this)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions  # noqa: E402

HEADER = """# test_synthesis options

Pass with `--pipeline-opt KEY=VALUE` (repeatable) or in a config file's `[pipeline_opts]` table.
Values: `true`/`false` → bool, a JSON literal → that value, anything else → a string. Unknown keys and
out-of-range values are errors (exit 2), never ignored.

This file is generated from `TestSynthesisOptions` by `scripts/gen_options_doc.py`.

| option | default | allowed | meaning |
|---|---|---|---|
"""


def render() -> str:
    rows = []
    schema = TestSynthesisOptions.model_json_schema()["properties"]
    for name, field in TestSynthesisOptions.model_fields.items():
        prop = schema[name]
        allowed = []
        for key, sym in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤")):
            if key in prop:
                allowed.append(f"{sym} {prop[key]}")
        if "enum" in prop:
            allowed.append(" \\| ".join(f"`{v}`" for v in prop["enum"]))
        default = json.dumps(field.default)
        rows.append(f"| `{name}` | `{default}` | {', '.join(allowed) or '—'} | {field.description or ''} |")
    return HEADER + "\n".join(rows) + "\n"


def main() -> int:
    target = ROOT / "docs" / "options.md"
    text = render()
    if "--check" in sys.argv:
        if not target.is_file() or target.read_text() != text:
            print("docs/options.md is stale: run python3 scripts/gen_options_doc.py", file=sys.stderr)
            return 1
        return 0
    target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
