"""Run a page's Python blocks in one interpreter, in order, sharing their names (tests/helpers/docs_examples.py).

Reads one JSON request per line on stdin, ``{"code": ..., "name": ...}``; runs the code with file descriptors 1
and 2 sent to a file (so that what libraries print is caught too); answers one JSON line on the original stdout,
``{"ok": bool, "output": what was printed, then the traceback if it failed}``.

``{"climio": [ARGS...], "env": {...}}`` runs one plain ``climio`` command line in this process instead, as
tests/helpers/climio_batch.py runs its cases (``climio.cli.main``, its own output files, a fresh trace), with
the page's environment as the shell has it at that point; the answer adds ``"status"``, the exit status.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback

from climio_batch import _case, descriptors_to


def main() -> None:
    answers = os.fdopen(os.dup(1), "w")
    requests = sys.stdin
    namespace: dict[str, object] = {"__name__": "__main__"}
    scratch = tempfile.mkdtemp(prefix="docs-climio-")
    for index, line in enumerate(requests):
        request = json.loads(line)
        if "climio" in request:
            os.environ.update(request.get("env", {}))
            status, out, err = _case(request["climio"], 0, scratch, index)
            answers.write(json.dumps({"ok": status == 0, "status": status, "output": out + err}) + "\n")
            answers.flush()
            continue
        with tempfile.TemporaryFile() as capture:
            ok = True
            with descriptors_to(capture, capture):
                try:
                    exec(compile(request["code"], request["name"], "exec"), namespace)  # noqa: S102 - the docs' own code
                except BaseException:  # noqa: BLE001 - reported to the test
                    ok = False
                    traceback.print_exc()
            capture.seek(0)
            output = capture.read().decode(errors="replace")
        answers.write(json.dumps({"ok": ok, "output": output}) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
