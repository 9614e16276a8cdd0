"""The ``fedcore`` command: the MUFC main job and the centralized job print their tables."""
import io

import pytest

from fedcore import cli
from fedcore.cli.mainjob import run_mufc_job


def test_mufc_job_table_on_a_small_shape():
    out = io.StringIO()
    rows = dict(run_mufc_job("tcga", n_removals=3, secure=True, n_retrain_samples=1, out=out))
    assert rows["removals"].startswith("3 random")
    for name in ("MUFC", "DC-KM", "K-FED"):
        assert float(rows[f"loss ratio {name}"]) >= 1.0
    assert "aggregation" in out.getvalue() and rows["aggregation"] == "SCMA (secure)"


def test_mufc_job_adversarial_batches():
    rows = dict(run_mufc_job("tcga", n_removals=2, batch_size=3, removal="adversarial",
                             secure=False, n_retrain_samples=1, out=io.StringIO()))
    assert rows["removals"] == "2 adversarial, batch 3"


def test_centralized_job(capsys):
    assert cli.main(["run", "--centralized", "--n-removals", "3"]) == 0
    assert "median unlearning time" in capsys.readouterr().out


def test_cli_rejects_bad_arguments():
    with pytest.raises(SystemExit):
        cli.main(["run", "--n-removals", "-1"])
    with pytest.raises(SystemExit):
        cli.main(["run", "--removal", "worst"])
    for extra in (["--centralized"], ["--removal", "adversarial"], ["--plot", "x.png"]):
        with pytest.raises(SystemExit):
            cli.main(["run", "--engine", "flower", *extra])
    with pytest.raises(SystemExit):
        cli.main(["run", "--engine", "spark"])


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
