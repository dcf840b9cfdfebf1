"""The wheel as users get it: built, installed into a fresh virtual environment, and the README's
quick start run against the real stack."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from .support import Product

ROOT = Path(__file__).resolve().parents[1]


def quick_start() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## A single call, without a model client", 1)[1]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    assert m, "the README has no quick start"
    return m.group(1)


def test_the_wheel_installs_alone_and_runs_the_readmes_quick_start(product: Product) -> None:
    assert product.api.post("/users", {"external_user_id": "user-42"}).status_code == 201
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--outdir", str(t / "dist"), str(ROOT)],
            check=True,
            capture_output=True,
        )
        wheel = next((t / "dist").glob("meterline-*.whl"))
        subprocess.run([sys.executable, "-m", "venv", str(t / "venv")], check=True)
        py = str(t / "venv" / "bin" / "python")
        subprocess.run([py, "-m", "pip", "install", "--quiet", str(wheel)], check=True, capture_output=True)
        # Only httpx came along at run time.
        listed = subprocess.run(
            [py, "-m", "pip", "list", "--format=freeze"], check=True, capture_output=True, text=True
        )
        names = {line.split("==")[0].lower() for line in listed.stdout.split()}
        assert "openai" not in names and "anthropic" not in names and "langchain-core" not in names
        script = t / "quick_start.py"
        script.write_text(quick_start())
        env = {**os.environ, "METER_API_KEY": product.key, "METER_BASE_URL": product.url}
        run = subprocess.run([py, str(script)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "user-42" in run.stdout
        typed = subprocess.run(
            [
                py,
                "-c",
                "import meterline, pathlib; print((pathlib.Path(meterline.__file__).parent / 'py.typed').exists())",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert typed.stdout.strip() == "True"
    # The quick start's call was delivered by shutdown().
    assert product.usage("user-42")["total_tokens"] == 42


def test_the_package_exports_exactly_what_the_readme_lists() -> None:
    import importlib

    readme = (ROOT / "README.md").read_text()
    section = readme.split("### What the package exports", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `meterline")]
    documented = {
        row.split("|")[1].strip().strip("`"): sorted(re.findall(r"`([^`]+)`", row.split("|")[2])) for row in rows
    }
    assert set(documented) == {"meterline", "meterline.openai", "meterline.anthropic", "meterline.langchain"}
    for module, names in documented.items():
        exported = sorted(importlib.import_module(module).__all__)
        assert exported == names, (module, set(exported) ^ set(names))
