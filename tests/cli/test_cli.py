"""The ``fedcore`` command: the MUFC main job (by default on the real Celltype split) and the
centralized job print their tables; options that do not apply are refused."""
import io

import pytest

from fedcore import cli
from fedcore.cli.mainjob import run_mufc_job
from fedcore.cli.report import table


def _cells(rows):
    """{row name: the cells after it}"""
    return {row[0]: row[1:] for row in rows}


def _printed(out):
    """{row name: the rest of the line} of a printed table (names hold no double space)."""
    return dict(line.split("  ", 1) for line in out.splitlines()
                if "  " in line and not line.startswith(" "))


def test_default_run_is_real_celltype_beside_the_paper(capsys):
    assert cli.main(["run", "--n-removals", "4"]) == 0
    out = capsys.readouterr().out
    rows = {name: value.split() for name, value in _printed(out).items()}
    assert " ".join(rows["dataset"]).startswith("Celltype, the [MUFC] authors' non-iid split "
                                                "(n=12009, d=10, K=4, L=100")
    assert rows["client seeds K'"] == ["4"] and rows["aggregation"] == ["SCMA", "(secure)"]
    assert "phi* = 188.08, the [MUFC] authors' precomputed optimum" in out
    paper = {"MUFC": "1.14", "K-FED": "1.72", "DC-KM": "1.46"}   # [MUFC] Table 1, Celltype
    for name, mean in paper.items():
        ours, *theirs = rows[f"loss ratio {name}"]
        assert theirs[0] == mean and theirs[1] == "+-"
        assert 1.0 < float(ours) < 2.0
    assert float(rows["loss ratio MUFC"][0]) < float(rows["loss ratio DC-KM"][0])
    assert rows["removals"] == ["4", "random,", "batch", "1"]
    assert float(rows["unlearning latency p50 / p99"][0]) > 0
    assert rows["speed-up vs retrain"][0].endswith("x")
    assert float(rows["loss ratio MUFC after removals"][0]) > 1.0
    assert "nan" not in out.lower()


def test_no_removals_prints_no_nan(capsys):
    assert cli.main(["run", "--n-removals", "0", "--insecure"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower()
    rows = _printed(out)
    assert rows["removals"].strip() == "0 random, batch 1"
    assert rows["unlearning latency p50 / p99"].strip() == "-"
    assert rows["speed-up vs retrain"].strip() == "-"
    assert cli.main(["run", "--centralized", "--n-removals", "0"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower() and _printed(out)["speed-up"].strip() == "-"


@pytest.mark.parametrize("argv, option", [
    (["--n-clients", "10"], "--n-clients"),                       # the split has 100 clients
    (["--dataset", "celltype", "--n-clients", "10"], "--n-clients"),
    (["--n-clusters", "5"], "--n-clusters"),                      # phi* is for K = 4
    (["--client-clusters", "61"], "--client-clusters"),           # the smallest client has 60
    (["--engine", "flower", "--dataset", "celltype"], "--dataset celltype"),
    (["--centralized", "--dataset", "gaussian"], "--dataset"),
    (["--centralized", "--n-clients", "5"], "--n-clients"),
    (["--centralized", "--insecure"], "--insecure"),
    (["--centralized", "--engine", "flower"], "--engine flower"),
    (["--engine", "flower", "--removal", "adversarial"], "--removal adversarial"),
    (["--engine", "flower", "--plot", "x.png"], "--plot"),
])
def test_options_that_do_not_apply_are_refused(argv, option, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", *argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if "error:" in line]
    assert line.startswith(f"fedcore run: error: argument {option}: ")
    assert "Traceback" not in err


def test_run_mufc_job_refuses_what_the_real_split_fixes():
    with pytest.raises(ValueError, match="--n-clients.*its own 100 clients"):
        run_mufc_job("celltype", n_clients=10, n_removals=0, out=io.StringIO())
    with pytest.raises(ValueError, match="--dataset: must be one of"):
        run_mufc_job("mnist", n_removals=0, out=io.StringIO())


def test_mufc_job_table_on_a_small_stand_in():
    out = io.StringIO()
    rows = _cells(run_mufc_job("tcga", n_removals=3, secure=True, n_retrain_samples=1,
                               out=out))
    assert rows["removals"][0].startswith("3 random")
    assert rows["dataset"][0].startswith("tcga (synthetic stand-in, seed 0; n=1904")
    assert rows["loss ratio measured against"][0].startswith("phi* = ")
    assert "best of 10 centralised k-means++ + Lloyd runs" in rows["loss ratio measured against"][0]
    for name in ("MUFC", "DC-KM", "K-FED"):
        ours, paper = rows[f"loss ratio {name}"]
        assert float(ours) >= 1.0 and paper == "-"        # no paper number for a stand-in
    assert "aggregation" in out.getvalue() and rows["aggregation"] == ("SCMA (secure)",)


def test_mufc_job_adversarial_batches():
    rows = _cells(run_mufc_job("tcga", n_removals=2, batch_size=3, removal="adversarial",
                               secure=False, n_retrain_samples=1, out=io.StringIO()))
    assert rows["removals"] == ("2 adversarial, batch 3",)


def test_table_aligns_rows_of_two_and_three_cells():
    text = table([("name", "a long value that ends its row"), ("ratio", "1.1", "1.14"),
                  ("r", "fedcore", "paper")])
    assert text.splitlines() == ["name   a long value that ends its row",
                                 "ratio  1.1      1.14",
                                 "r      fedcore  paper"]


def test_centralized_job(capsys):
    assert cli.main(["run", "--centralized", "--n-removals", "3"]) == 0
    assert "median unlearning time" in capsys.readouterr().out


def test_cli_rejects_bad_arguments():
    with pytest.raises(SystemExit):
        cli.main(["run", "--n-removals", "-1"])
    with pytest.raises(SystemExit):
        cli.main(["run", "--removal", "worst"])
    with pytest.raises(SystemExit):
        cli.main(["run", "--engine", "spark"])
    with pytest.raises(SystemExit):
        cli.main(["run", "--dataset", "mnist"])


def test_flower_removal_plan_keeps_client_clusters_points():
    import numpy as np
    from fedcore.cli.flowerjob import plan_removals
    held = {0: list(range(10)), 1: list(range(10, 13)), 2: list(range(13, 20))}
    plan = plan_removals(held, 5, 2, 3, np.random.default_rng(0))   # 3 + 0 + 2 batches fit
    removed = [i for _, ids in plan for i in ids]
    assert len(removed) == len(set(removed)) == 10          # never the same point twice
    for client, ids in plan:
        assert set(ids) <= set(held[client]) and len(ids) == 2
    left = {l: len(ids) - sum(len(i) for c, i in plan if c == l) for l, ids in held.items()}
    assert min(left.values()) >= 3 and left[1] == 3          # client 1 was never eligible
    with pytest.raises(ValueError, match="No client can lose another batch"):
        plan_removals(held, 6, 2, 3, np.random.default_rng(0))
