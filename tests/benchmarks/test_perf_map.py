"""``benchmarks/perf_map.py``: the map names a function compiled in the process at its address."""
import numba
import numpy as np

from tests.scripts import load_script


@numba.njit  # compiled here, never cached: its LLVM module is in memory
def _perf_map_probe(x):
    return x * 3 + 1


def test_the_map_names_a_compiled_function_at_its_entry_point(tmp_path):
    perf_map = load_script("perf_map")
    assert _perf_map_probe(np.int64(2)) == 7
    path = tmp_path / "perf.map"
    count = perf_map.write_perf_map(str(path))
    lines = [line.split(" ", 2) for line in path.read_text().splitlines()]
    assert count == len(lines) > 0
    mine = [(int(start, 16), int(size, 16)) for start, size, name in lines
            if "_perf_map_probe" in name]
    assert mine, "the probe's function is not in the map"
    # The compiled entry point of the probe lies inside a range the map gives it.
    result = next(iter(_perf_map_probe.overloads.values()))
    entry = result.library.get_pointer_to_function(result.fndesc.llvm_func_name)
    assert any(start <= entry < start + size for start, size in mine)
    starts = sorted(int(start, 16) for start, _, _ in lines)
    assert len(set(starts)) == len(starts)  # one name per address
