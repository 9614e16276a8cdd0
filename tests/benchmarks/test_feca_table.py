"""``benchmarks/feca_table1.py``, the [FeCA] Table 1 script: its copy of the paper's numbers, its
metric helpers, its data sources, its ablation row ([FeCA] Appendix C.3) and its refusal of the
ablation with a fedcore that cannot run it. The tables themselves are made by running the script
(``--quick`` for a smoke test), not here."""
import numpy as np
import pytest

import fedcore
from fedcore.datasets import load_s_sets
from fedcore.datasets.balls import make_stochastic_ball
from tests.scripts import load_script


@pytest.fixture(scope="module")
def table():
    return load_script("feca_table1")


def test_paper_rows_have_twelve_cells(table):
    for name, cells in table.PAPER.items():
        assert len(cells) == 12, name
        for cell in filter(None, cells):
            mean, std = (float(v) for v in cell.split("±"))
            assert mean >= 0 and std >= 0, (name, cell)


def test_mse_matches_the_papers_own_conversion(table):
    """[FeCA] Table 5 gives FeCA's S1 IID MSE x 1e6 as 6.7; Table 1 gives its l2 x 1e4 as 1.0."""
    assert table.mse_1e6(1.0) == pytest.approx(table.PAPER_MSE_S1_IID["FeCA"], abs=0.05)


def test_missing_centers_are_charged(table):
    truth = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 20.0]])
    found = np.array([[0.0, 1.0], [10.0, 0.0]])
    # matched: (0,0)-(0,1) costs 1; unmatched (0,20) costs 19^2 to its nearest center (0,1).
    assert table.l2_to_truth(found, truth) == pytest.approx(np.sqrt(1.0 + 19.0 ** 2))
    assert table.l2_to_truth(truth[::-1], truth) == 0.0


def test_real_s_sets_are_the_bundled_ones(table):
    X, y, centers = table.s_set(3, seed=7, data="real")
    X0, y0, c0 = load_s_sets(3)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(centers, c0)
    assert not X.flags.writeable
    assert table.s_set(3, seed=8, data="real")[0] is X


def test_ablation_row_is_feca_without_removal(table):
    assert table.feca_has_ablation()
    X, y, _ = make_stochastic_ball(600, 2, 3, separation=20.0, random_state=0)
    fed, _ = table.partition(X, y, "iid", None, 0, 3)
    removed = []
    out = table.fit_all(fed, X, 3, 2, 2, 0, "auto", ablation=True, removed=removed)
    kwargs = {"n_init": 2, "n_local_trials": "auto", "random_state": 0}
    np.testing.assert_array_equal(out["FeCA"], fedcore.FeCA(3, **kwargs).fit(fed).cluster_centers_)
    off = fedcore.FeCA(3, remove_one_fit_many=False, **kwargs).fit(fed)
    np.testing.assert_array_equal(out[table.ABLATION], off.cluster_centers_)
    assert removed == [sum(r.size for r in fedcore.FeCA(3, **kwargs).fit(fed).client_removed_)]
    assert table.ABLATION not in table.fit_all(fed, X, 3, 2, 2, 0, "auto")


def test_ablation_is_refused_without_a_feca_parameter(table, capsys, monkeypatch):
    monkeypatch.setattr(table, "feca_has_ablation", lambda: False)
    with pytest.raises(SystemExit) as info:
        table.main(["--ablation", "--quick"])
    assert info.value.code == 2
    assert table.ABLATION_PARAM in capsys.readouterr().err
