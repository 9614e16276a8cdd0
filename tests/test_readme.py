"""The README's examples run, and CI runs the README's test command verbatim."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert len(blocks) >= 3
    namespace = {}
    for block in blocks:  # blocks share state, in order, as a reader would run them
        exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["model"].n_samples_ == 2997


def test_ci_runs_readme_commands():
    setup = re.search(r"## Set up\n+```bash\n(.*?)```", README, flags=re.S).group(1)
    commands = [line.split("#")[0].strip() for line in setup.strip().splitlines()]
    assert commands[0].endswith("fedcore run") and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci.splitlines()
    assert any(line.startswith(commands[0]) for line in ci.splitlines())
