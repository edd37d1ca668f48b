"""``probe.py check`` plus each failing test's error tail: the LLM oracle's feedback needs the why, not only the what.

Standalone, like the probe: copied next to ``probe.py`` into the sandbox's scratch dir and run as
``python probe_tails.py check --spec IN.json --out OUT.json``. It swaps the probe's report collector for
one that also keeps the end of pytest's failure text per test (as ``tails`` in OUT.json) and otherwise
is the probe itself, so the two can never disagree about outcomes. Stdlib + pytest, Python >= 3.8.
"""

import sys

import probe

TAIL_CHARS = 1500


class TailCollector(probe.ReportCollector):
    """The probe's collector, keeping the first failure text of each test (its last `TAIL_CHARS`)."""

    latest = None

    def __init__(self):
        super().__init__()  # not probe.ReportCollector: that name is rebound to this class below
        self.tails = {}
        TailCollector.latest = self

    def pytest_runtest_logreport(self, report):
        super().pytest_runtest_logreport(report)
        name = report.nodeid.split("::")[-1]
        if report.failed and name not in self.tails:
            self.tails[name] = str(report.longrepr)[-TAIL_CHARS:]


def check_with_tails(spec):
    result = probe.check(spec)
    result["tails"] = TailCollector.latest.tails if TailCollector.latest is not None else {}
    return result


if __name__ == "__main__":
    probe.ReportCollector = TailCollector  # probe.check looks the class up at call time
    probe.MODES["check"] = check_with_tails
    sys.exit(probe.main())
