"""Record the golden streams of the Gemini-client compositions (cases.json and outputs/).

    PYTHONPATH=python:tests python tests/golden_gemini_client/record.py

Re-record only for an intended change of output, and say so in the commit. Each recording
is checked native == Python before it is written.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import gemini_client_golden as golden  # noqa: E402


def main() -> None:
    outputs = HERE / "outputs"
    shutil.rmtree(outputs, ignore_errors=True)
    recorded = []
    for case in golden.cases():
        python = golden.run(case, "python")
        native = golden.run(case, "native")
        assert python == native, f"{case['direction']}/{case['name']}: native != Python"
        folder = outputs / case["direction"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{case['name']}.sse").write_bytes(python[0])
        recorded.append({**case, "state": python[1]})
    (HERE / "cases.json").write_text(json.dumps(recorded, indent=1) + "\n")
    print(f"recorded {len(recorded)} cases")


if __name__ == "__main__":
    main()
