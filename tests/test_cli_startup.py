"""The commands a labeller runs most (help, status, export, label --from) start without loading
torch: it took about 0.8 s of their 2 s on two cores; nor scikit-learn, pandas, matplotlib,
BoTorch or GPyTorch, which only some commands use, nor Alembic, which only a database below the
newest schema needs. The check is what a command imports (a structural property, not a timing);
`round` and `design` load torch when they fit or run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_cli import TINY, env, project, run, write_pool_csv  # noqa: F401 (fixtures)

PROBE = """
import json, sys
from typer.testing import CliRunner
from activebayes_cli.main import app
result = CliRunner().invoke(app, sys.argv[1:])
heavy = ("torch", "sklearn", "pandas", "matplotlib", "botorch", "gpytorch", "alembic")
print(json.dumps({"exit": result.exit_code, "heavy": [m for m in heavy if m in sys.modules], "output": result.output[-400:]}))
"""


def heavy_imports(folder: Path, *args: str) -> list[str]:
    """The heavy libraries a command loaded, in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=folder, capture_output=True, text=True, timeout=120)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["exit"] == 0, report["output"]
    return report["heavy"]


def test_help_status_export_and_label_from_start_without_heavy_libraries(project, tmp_path):
    write_pool_csv(Path("pool.csv"), n=30)
    assert run("pool", "add", "pool.csv", "--key-column", "id").exit_code == 0
    asked = json.loads(run("--json", "round", *TINY, "--k", "3").stdout)
    truth = {row.split(",")[0]: row.split(",")[-1] for row in Path("pool.csv").read_text().splitlines()[1:]}
    Path("answers.csv").write_text("key,label\n" + "".join(f"{q['key']},{truth[q['key']]}\n" for q in asked["queries"]))
    for args in (["--help"], ["status"], ["--json", "status"], ["export", "labels.csv"], ["label", "--from", "answers.csv"], ["status"]):
        assert heavy_imports(tmp_path, *args) == [], args
    assert "torch" in heavy_imports(tmp_path, "round", *TINY, "--k", "3")  # the probe sees torch where it is needed
