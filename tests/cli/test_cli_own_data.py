"""The ``fedcore`` subcommands on the user's own data (mufc, feca, f3km, coreset, remove): they
read CSV / .npy / .npz files, save models that ``fedcore.load`` reads, write JSON results, unlearn
exactly as the Python API does, and refuse bad options and data with one line and exit code 2."""
import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import fedcore
from fedcore import cli

N, K = 240, 3
HOSPITALS = np.array(["north", "south", "east"])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A CSV (features, a client column, labels, a sensitive attribute, a numeric target), the
    same features as .npy and as .npz with client and label arrays."""
    folder = tmp_path_factory.mktemp("own_data")
    rng = np.random.default_rng(0)
    y = rng.integers(0, K, N)
    X = np.array([[0.0, 0.0, 0.0], [6.0, 6.0, 0.0], [0.0, 6.0, 6.0]])[y]
    X = np.round(X + rng.normal(scale=0.5, size=(N, 3)), 4)
    hospital = HOSPITALS[rng.integers(0, 3, N)]
    sex = rng.choice(["f", "m"], N)
    target = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(scale=0.1, size=N)
    path = folder / "my.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["age", "bp", "chol", "hospital", "cell_type", "sex", "outcome"])
        for i in range(N):
            w.writerow([*X[i], hospital[i], f"type{y[i]}", sex[i], round(target[i], 6)])
    np.save(folder / "my.npy", X)
    np.savez(folder / "my.npz", X=X, client=rng.integers(0, 4, N), y=y)
    return {"dir": folder, "csv": str(path), "npy": str(folder / "my.npy"),
            "npz": str(folder / "my.npz"), "X": X, "y": y, "hospital": hospital, "sex": sex}


def _run(argv, capsys):
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower()
    return out


def _refused(argv, capsys):
    """The one error line of a refused command (exit code 2, no traceback)."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [line for line in err.splitlines() if "error:" in line]
    return line


CSV_EXTRA = ["--drop", "sex", "outcome"]


def test_mufc_on_a_csv_with_a_client_column(data, tmp_path, capsys):
    model_path, json_path = tmp_path / "model.npz", tmp_path / "out.json"
    out = _run(["mufc", "--data", data["csv"], "--client-column", "hospital",
                "--label-column", "cell_type", "--n-clusters", str(K), *CSV_EXTRA,
                "--output", str(model_path), "--json", str(json_path)], capsys)
    assert "3 clients by column 'hospital'" in out and "saved to" in out
    result = json.loads(json_path.read_text())
    assert result["data"]["features"] == ["age", "bp", "chol"]
    fed = result["federation"]
    assert fed["clients"] == sorted(HOSPITALS.tolist())          # client l: l-th smallest name
    assert fed["client_sizes"] == [int((data["hospital"] == h).sum()) for h in fed["clients"]]
    model = fedcore.load(model_path)
    assert isinstance(model, fedcore.MUFC)
    centers = np.array(result["centers"])
    assert centers.shape == (K, 3) and (centers == model.cluster_centers_).all()
    labels = model.predict(data["X"])
    assert result["sizes"] == np.bincount(labels, minlength=K).tolist()
    assert result["objective"]["inertia"] == pytest.approx(
        fedcore.metrics.inertia(data["X"], centers))
    assert result["objective"]["federated_inertia"] > 0
    assert result["comm"]["rounds"] == 1 and result["comm"]["up"]["messages"] > 0
    assert result["evaluation"]["purity"] > 0.95
    assert set(result["timings"]) >= {"read_s", "fit_s", "save_s", "total_s"}


def test_remove_equals_removing_in_python(data, tmp_path, capsys):
    saved = tmp_path / "model.npz"
    _run(["mufc", "--data", data["csv"], "--client-column", "hospital", "--n-clusters", str(K),
          "--drop", "cell_type", "sex", "outcome", "--output", str(saved)], capsys)
    # ids held by two clients: one request per client, clients in order
    south, north = np.flatnonzero(data["hospital"] == "south"), np.flatnonzero(
        data["hospital"] == "north")
    ids = [int(south[3]), int(north[5]), int(south[0])]
    after, report = tmp_path / "after.npz", tmp_path / "remove.json"
    out = _run(["remove", "--model", str(saved), "--ids", *map(str, ids), "--output", str(after),
                "--json", str(report)], capsys)
    assert "points left  " in out and f"saved to     {after}" in out
    expected = fedcore.load(saved)           # --output: the original file is untouched
    north_client, south_client = 1, 2        # sorted names: east, north, south
    expected.remove(north_client, [ids[1]])
    expected.remove(south_client, [ids[0], ids[2]])
    removed = fedcore.load(after)
    assert (removed.cluster_centers_ == expected.cluster_centers_).all()
    assert int(removed.aggregate_[1].sum()) == N - 3
    result = json.loads(report.read_text())
    assert [(r["client"], r["ids"]) for r in result["requests"]] == [
        (north_client, [ids[1]]), (south_client, [ids[0], ids[2]])]
    assert result["n_samples_left"] == N - 3
    assert np.array(result["centers"]).tolist() == expected.cluster_centers_.tolist()
    # without --output the model file is replaced; removing the same id again is refused
    _run(["remove", "--model", str(after), "--ids", "7"], capsys)
    line = _refused(["remove", "--model", str(after), "--ids", "7"], capsys)
    assert line.startswith("fedcore remove: error: argument --ids: 7 is not among the points")


def test_remove_on_an_unlearnable_kmeans_model(data, tmp_path, capsys):
    path = tmp_path / "ukm.npz"
    fedcore.UnlearnableKMeans(K, random_state=0).fit(data["X"]).save(path)
    expected = fedcore.load(path)
    center = int(expected.center_ids_[1])
    ids = [center, 10 if center != 10 else 11]
    out = _run(["remove", "--model", str(path), "--ids", *map(str, ids)], capsys)
    assert "retrained    yes: a removed point was center 1" in out
    outcome = expected.remove(ids)
    assert outcome.retrained and outcome.restart_position == 1
    again = fedcore.load(path)
    assert (again.cluster_centers_ == expected.cluster_centers_).all()
    assert again.n_samples_ == N - 2


def test_feca_on_npy_with_an_iid_partition(data, tmp_path, capsys):
    json_path, model_path = tmp_path / "feca.json", tmp_path / "feca.npz"
    out = _run(["feca", "--data", data["npy"], "--partition", "iid", "--n-clients", "4",
                "--n-clusters", str(K), "--json", str(json_path), "--output", str(model_path)],
               capsys)
    assert "4 clients drawn by --partition iid (60 rows a client)" in out
    result = json.loads(json_path.read_text())
    assert result["data"]["features"] == ["0", "1", "2"]
    assert result["federation"]["client_sizes"] == [60] * 4
    model = fedcore.load(model_path)
    assert isinstance(model, fedcore.FeCA)
    assert model.predict(data["X"]).shape == (N,)
    assert sum(result["sizes"]) == N


def test_mufc_on_npz_with_a_noniid_partition(data, tmp_path, capsys):
    json_path = tmp_path / "out.json"
    _run(["mufc", "--data", data["npz"], "--partition", "noniid", "--n-clients", "3",
          "--label-column", "y", "--clusters-per-client", "1", "--n-clusters", str(K),
          "--client-clusters", "1", "--insecure", "--drop", "client", "--json", str(json_path)],
         capsys)
    result = json.loads(json_path.read_text())
    assert result["params"]["secure"] is False and result["params"]["client_clusters"] == 1
    assert result["federation"]["split"] == "drawn by --partition noniid --clusters-per-client 1"
    assert result["evaluation"]["label_column"] == "y"
    # the npz's client array as the client column
    _run(["mufc", "--data", data["npz"], "--client-column", "client", "--drop", "y",
          "--n-clusters", str(K), "--json", str(json_path)], capsys)
    assert json.loads(json_path.read_text())["federation"]["clients"] == [0, 1, 2, 3]


def test_f3km_fair_then_vertical(data, tmp_path, capsys):
    json_path, model_path = tmp_path / "f3.json", tmp_path / "f3.npz"
    out = _run(["f3km", "--data", data["csv"], "--groups", "sex", "--n-clusters", str(K),
                "--drop", "hospital", "cell_type", "outcome", "--json", str(json_path),
                "--output", str(model_path)], capsys)
    assert "communication  none (one machine)" in out
    result = json.loads(json_path.read_text())
    assert result["method"] == "FairKMeans" and result["comm"] is None
    assert len(result["objective"]["balance"]) == K and result["objective"]["violation"] >= 0
    model = fedcore.load(model_path)
    assert (np.array(result["centers"]) == model.cluster_centers_).all()
    assert sum(result["sizes"]) == N
    # across two parties, the last holding both sensitive attributes: federated F3KM
    _run(["f3km", "--data", data["csv"], "--groups", "sex", "hospital", "--vertical",
          "--parties", "2", "--drop", "cell_type", "outcome", "--n-clusters", str(K),
          "--json", str(json_path)], capsys)
    result = json.loads(json_path.read_text())
    assert result["federation"]["parties"] == [["age", "bp"], ["chol"]]
    assert result["method"] == "FairKMeans" and result["comm"]["rounds"] > 1
    # no sensitive attribute: DisBCDKM
    _run(["f3km", "--data", data["npy"], "--splits", "1,2", "--n-clusters", str(K),
          "--output", str(model_path), "--json", str(json_path)], capsys)
    result = json.loads(json_path.read_text())
    assert result["method"] == "BCDKM" and result["federation"]["splits"] == [1, 2]
    assert fedcore.load(model_path).predict(data["X"]).shape == (N,)


def test_coresets(data, tmp_path, capsys):
    json_path, model_path = tmp_path / "cs.json", tmp_path / "km.npz"
    _run(["coreset", "--data", data["npy"], "--parties", "3", "--size", "60", "--n-clusters",
          str(K), "--json", str(json_path), "--output", str(model_path)], capsys)
    result = json.loads(json_path.read_text())
    core = result["coreset"]
    assert core["kind"] == "vkmc" and core["size"] == 60
    assert len(core["indices"]) == len(core["weights"]) == core["distinct_rows"] <= 60
    assert all(0 <= i < N for i in core["indices"])
    model = fedcore.load(model_path)
    assert isinstance(model, fedcore.KMeans)
    assert result["sizes"] == np.bincount(model.predict(data["X"]), minlength=K).tolist()
    assert result["comm"]["rounds"] > core["comm"]["rounds"]        # plus the upload
    _run(["coreset", "--kind", "vrlr", "--data", data["csv"], "--target", "outcome",
          "--splits", "2,1", "--size", "80", "--ridge-alpha", "0.1",
          "--drop", "hospital", "cell_type", "sex", "--json", str(json_path),
          "--output", str(model_path)], capsys)
    result = json.loads(json_path.read_text())
    assert result["target"] == "outcome" and len(result["coef"]) == 3
    np.testing.assert_allclose(result["coef"], [1.0, -2.0, 0.5], atol=0.1)
    ridge = fedcore.load(model_path)
    assert ridge.predict(data["X"]).shape == (N,)


@pytest.mark.parametrize("argv, start", [
    (["mufc", "--n-clusters", "3", "--partition", "iid", "--n-clients", "2"],
     "the following arguments are required: --data"),
    (["mufc", "--n-clusters", "3"], "one of the arguments --client-column --partition"),
    (["mufc", "--client-column", "hospital", "--partition", "iid", "--n-clusters", "3"],
     "argument --partition: not allowed with --client-column"),
    (["mufc", "--client-column", "hospital", "--n-clients", "3", "--n-clusters", "3"],
     "argument --n-clients: not allowed with --client-column"),
    (["mufc", "--partition", "iid", "--n-clusters", "3"],
     "argument --n-clients: required with --partition iid"),
    (["feca", "--partition", "noniid", "--n-clients", "3", "--n-clusters", "3"],
     "argument --label-column: required with --partition noniid"),
    (["mufc", "--partition", "iid", "--n-clients", "3", "--alpha", "0.5", "--n-clusters", "3"],
     "argument --alpha: not allowed with --partition iid"),
    (["mufc", "--partition", "spark", "--n-clients", "3", "--n-clusters", "3"],
     "argument --partition: invalid choice: 'spark' (choose from"),
    (["mufc", "--partition", "iid", "--n-clients", "3", "--n-clusters", "0"],
     "argument --n-clusters: must be an integer >= 1, got '0'"),
    (["mufc", "--partition", "iid", "--n-clients", "3"],
     "the following arguments are required: --n-clusters"),
    (["mufc", "--partition", "iid", "--n-clients", "3", "--n-clusters", "3", "--groups", "sex"],
     "argument --groups: not allowed with fedcore mufc"),
    (["feca", "--partition", "iid", "--n-clients", "3", "--n-clusters", "3", "--insecure"],
     "argument --insecure: not allowed with fedcore feca"),
    (["f3km", "--n-clusters", "3"], "argument --groups: required without --vertical"),
    (["f3km", "--vertical", "--n-clusters", "3"], "argument --vertical: give the parties'"),
    (["f3km", "--client-column", "hospital", "--groups", "sex", "--n-clusters", "3"],
     "argument --client-column: not allowed with fedcore f3km"),
    (["f3km", "--parties", "2", "--delta", "0.1", "--n-clusters", "3"],
     "argument --delta: not allowed without --groups"),
    (["f3km", "--groups", "sex", "--delta", "1.5", "--n-clusters", "3"],
     "argument --delta: must be a number >= 0.0 and < 1.0"),
    (["f3km", "--parties", "2", "--splits", "1,2", "--n-clusters", "3"],
     "argument --splits: not allowed with --parties"),
    (["f3km", "--splits", "1,x", "--n-clusters", "3"], "argument --splits: must be feature"),
    (["coreset", "--size", "10", "--n-clusters", "3"],
     "one of the arguments --parties --splits is required"),
    (["coreset", "--parties", "2", "--n-clusters", "3"],
     "the following arguments are required: --size"),
    (["coreset", "--kind", "vrlr", "--parties", "2", "--size", "10"],
     "argument --target: required with --kind vrlr"),
    (["coreset", "--kind", "vrlr", "--parties", "2", "--size", "10", "--target", "outcome",
      "--n-clusters", "3"], "argument --n-clusters: not allowed with --kind vrlr"),
    (["coreset", "--parties", "2", "--size", "10", "--n-clusters", "3", "--target", "outcome"],
     "argument --target: not allowed with --kind vkmc"),
    (["coreset", "--kind", "kmeans", "--parties", "2", "--size", "10"],
     "argument --kind: invalid choice: 'kmeans' (choose from 'vkmc', 'vrlr')"),
    (["mufc", "--partition", "iid", "--n-clients", "2", "--n-clusters", "3", "--output",
      "/no/such/folder/m.npz"], "argument --output: no such directory"),
])
def test_bad_options_are_refused(argv, start, data, capsys):
    if "--data" not in start:
        argv = [*argv, "--data", data["csv"]]
    line = _refused(argv, capsys)
    assert line.startswith(f"fedcore {argv[0]}: error: {start}"), line


@pytest.mark.parametrize("argv, start", [
    (["mufc", "--data", "{dir}/nope.csv"], "argument --data: no such file: "),
    (["mufc", "--data", "{dir}/text.csv"], "argument --data: column 'city' is not numeric "
                                           "('Paris' in line 3 of "),
    (["mufc", "--data", "{dir}/hole.csv"], "argument --data: column 'b' has no value in line 2"),
    (["mufc", "--data", "{dir}/ragged.csv"], "argument --data: line 3 of "),
    (["mufc", "--data", "{dir}/nan.csv"], "argument --data: column 'a' holds nan in line 3"),
    (["mufc", "--data", "{dir}/two.npz"], "argument --data: "),
    (["mufc", "--data", "{dir}/my.csv", "--client-column", "hosp"],
     "argument --client-column: no column 'hosp' in "),
    (["mufc", "--data", "{dir}/noclient.csv", "--client-column", "h"],
     "argument --client-column: column 'h' has no value in line 3 of "),
    (["mufc", "--data", "{dir}/semicolon.csv"], "argument --data: the header line of "),
])
def test_bad_data_is_refused(argv, start, data, capsys):
    folder = data["dir"]
    (folder / "text.csv").write_text("a,city\n1,2\n3,Paris\n")
    (folder / "hole.csv").write_text("a,b\n1,\n3,4\n")
    (folder / "ragged.csv").write_text("a,b\n1,2\n3\n")
    (folder / "nan.csv").write_text("a,b\n1,2\nnan,4\n")
    (folder / "noclient.csv").write_text("a,h\n1,x\n3,\n")
    (folder / "semicolon.csv").write_text("a;b\n1;2\n")
    np.savez(folder / "two.npz", A=np.ones((4, 2)), B=np.ones((4, 2)))
    argv = [a.format(dir=folder) for a in argv]
    if "--client-column" not in argv:
        argv += ["--partition", "iid", "--n-clients", "1"]
    line = _refused([*argv, "--n-clusters", "1"], capsys)
    assert line.startswith(f"fedcore mufc: error: {start}"), line


def test_the_librarys_refusals_name_the_option(data, capsys):
    base = ["mufc", "--data", data["npy"], "--n-clusters", "3"]
    line = _refused([*base, "--partition", "iid", "--n-clients", "1000"], capsys)
    assert line == "fedcore mufc: error: argument --n-clients: must be <= 240, got 1000"
    line = _refused(["feca", "--data", data["csv"], "--client-column", "hospital",
                     "--n-clusters", "3", "--client-clusters", "200", *CSV_EXTRA,
                     "--drop", "cell_type"], capsys)
    assert line.startswith("fedcore feca: error: argument --client-clusters: client 'east' "
                           "(column 'hospital') holds ")


def test_remove_refusals(data, tmp_path, capsys):
    path = tmp_path / "feca.npz"
    _run(["feca", "--data", data["npy"], "--partition", "iid", "--n-clients", "2",
          "--n-clusters", str(K), "--output", str(path)], capsys)
    line = _refused(["remove", "--model", str(path), "--ids", "1"], capsys)
    assert line.startswith("fedcore remove: error: argument --model: ") and "FeCA" in line
    line = _refused(["remove", "--model", str(tmp_path / "none.npz"), "--ids", "1"], capsys)
    assert line.startswith("fedcore remove: error: argument --model: no such file")
    (tmp_path / "junk.npz").write_text("not a model")
    line = _refused(["remove", "--model", str(tmp_path / "junk.npz"), "--ids", "1"], capsys)
    assert line.startswith("fedcore remove: error: argument --model: ")
    line = _refused(["remove", "--model", str(path), "--ids", "1", "1"], capsys)
    assert line == "fedcore remove: error: argument --ids: id 1 is given twice"
    line = _refused(["remove", "--model", str(path), "--ids", "x"], capsys)
    assert line == "fedcore remove: error: argument --ids: invalid int value: 'x'"


def test_the_command_in_a_new_process(data, tmp_path):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    model = tmp_path / "model.npz"
    done = subprocess.run([sys.executable, "-m", "fedcore.cli", "mufc", "--data", data["csv"],
                           "--client-column", "hospital", "--n-clusters", str(K), *CSV_EXTRA,
                           "--output", str(model)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr and not model.exists()
    assert done.stderr.strip().splitlines() == [
        f"fedcore mufc: error: argument --data: column 'cell_type' is not numeric "
        f"('type{data['y'][0]}' in line 2 of {data['csv']}); features must be numbers: name it "
        "with --client-column, --label-column or --groups, or leave it out with --drop"]
    done = subprocess.run([sys.executable, "-m", "fedcore.cli", "mufc", "--data", data["csv"],
                           "--client-column", "hospital", "--n-clusters", str(K),
                           "--drop", "cell_type", "--drop", "sex", "outcome",   # --drop adds up
                           "--output", str(model)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "3 clients by column 'hospital'" in done.stdout
    done = subprocess.run([sys.executable, "-m", "fedcore.cli", "remove", "--model", str(model),
                           "--ids", "17", "42"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "points left  238" in done.stdout
