"""The package layout: import paths users had before the split into family packages keep
working, and no private name crosses fedcore's packages."""
import ast
import importlib
import pathlib
import sys
import warnings

import pytest

import fedcore
from fedcore._moved import MOVED_MODULES

# The public names of every module whose path changed, as of the layout before the split.
OLD_ALL = {
    'fedcore.algorithms.cdkm': ['CDKM', 'BCDKM', 'bcd_kmeans'],
    'fedcore.algorithms.coreset': [   'Coreset', 'VerticalCoreset', 'dis_sample',
                                      'vkmc_local_scores', 'vkmc_coreset', 'vrlr_local_scores',
                                      'vrlr_coreset', 'uniform_coreset', 'gather',
                                      'robust_coreset_error'],
    'fedcore.algorithms.coreset_result': ['Coreset', 'gather', 'robust_coreset_error'],
    'fedcore.algorithms.dckmeans': ['DCKMeans'],
    'fedcore.algorithms.distdim': ['DistDim', 'distdim'],
    'fedcore.algorithms.fair': ['FairKMeans', 'FairLP', 'fair_kmeans'],
    'fedcore.algorithms.fair_lp': ['FairLP'],
    'fedcore.algorithms.feca': [   'FeCA', 'FeCAResult', 'FewerGroupsWarning', 'feca',
                                   'feca_client', 'feca_server', 'check_feca_params',
                                   'client_update', 'radius_assign', 'server_aggregation',
                                   'cluster_statistics', 'greedy_ball_groups', 'check_federation',
                                   'client_kmeans', 'predict_nearest', 'run_clients',
                                   'single_threaded_kernels'],
    'fedcore.algorithms.ffcm': ['FFCM', 'FFCMResult', 'ffcm', 'fcm_statistics', 'fuzzy_c_means'],
    'fedcore.algorithms.kfed': ['KFed', 'KFedResult', 'kfed', 'farthest_point_init'],
    'fedcore.algorithms.kmeans': ['kmeans_plusplus', 'KMeans'],
    'fedcore.algorithms.kmeanspp': ['kmeans_plusplus'],
    'fedcore.algorithms.match_averaging': [   'MatchAveraging', 'MatchAveragingResult',
                                              'match_averaging', 'match_average_centers'],
    'fedcore.algorithms.mufc': ['MUFC', 'MUFCRemovalReport', 'SimplifiedFC'],
    'fedcore.algorithms.ridge': ['VerticalRidge', 'ridge_central', 'ridge_saga'],
    'fedcore.algorithms.unlearning': ['UnlearnableKMeans', 'RemovalResult'],
    'fedcore.cli': ['main'],
    'fedcore.kernels.cd_fairness': ['fair_tables', 'fairness_change', 'fairness_lagrangian'],
    'fedcore.kernels.cd_kmeans': [   'SEGMENT_ROWS', 'column_moments', 'centered_sq_norms',
                                     'cluster_statistics', 'fair_tables', 'bcd_row_objectives',
                                     'choose_moves', 'move_deltas', 'objective_change',
                                     'fairness_change', 'apply_moves', 'fairness_lagrangian',
                                     'bcd_sweep', 'partition_sums', 'partition_sse'],
    'fedcore.kernels.cd_statistics': [   'column_moments', 'centered_sq_norms',
                                         'cluster_statistics'],
    'fedcore.kernels.distances': [   'row_distances', 'own_distance', 'nearest_center',
                                     'nearest_two', 'pairwise_sq_distances', 'assign_nearest'],
    'fedcore.kernels.field': [   'MERSENNE_61', 'MAX_PRIME', 'is_prime', 'field_context',
                                 'mulmod', 'mulmod_ctx', 'powmod', 'powmod_ctx', 'inverse',
                                 'batch_inverse', 'batch_inverse_ctx', 'addmod', 'submod',
                                 'negmod', 'mac', 'reduce_wide', 'accumulation_limit',
                                 'dot_forward', 'dot_reverse', 'sub_scaled_into', 'add_into',
                                 'sub_into', 'sum_messages', 'scale_into', 'mul_into'],
    'fedcore.kernels.lloyd': [   'Screen', 'BLOCK_ROWS', 'screen_eps', 'make_screen',
                                 'uses_screen', 'lloyd_iteration', 'half_separation',
                                 'relocate_empty', 'lloyd_run', 'lloyd_core', 'one_blas_thread'],
    'fedcore.kernels.lloyd_replay': [   'LloydTrace', 'LloydPrior', 'top_two', 'center_moves',
                                        'prime_bounds', 'sparse_estep', 'mark_dirty',
                                        'sparse_sums', 'grow_trace'],
    'fedcore.kernels.polynomial': [   'KARATSUBA_THRESHOLD', 'NEWTON_THRESHOLD', 'degree',
                                      'poly_mul', 'poly_divmod', 'poly_gcd', 'poly_eval',
                                      'poly_eval_rows', 'poly_from_roots', 'karatsuba_workspace',
                                      'mul_equal', 'mul_general', 'gcd_into', 'rem_monic_inplace',
                                      'eval_many_ctx'],
    'fedcore.kernels.polynomial_mod': [   'series_inverse_into', 'series_inverse',
                                          'modulus_inverse', 'mulmod_poly', 'mul_linear_mod',
                                          'powmod_into', 'poly_powmod'],
    'fedcore.kernels.reed_solomon': [   'power_sums', 'berlekamp_massey', 'find_roots',
                                        'forney_magnitudes', 'solve_transposed_vandermonde',
                                        'split_order', 'ROOTS_NOT_SPLIT',
                                        'ROOTS_NO_SPLIT_FOUND'],
    'fedcore.kernels.seeding': [   'n_chunks', 'chunk_sums', 'pick_index', 'pick_product',
                                   'pick_pending', 'd2_update', 'center_gaps', 'min_gaps',
                                   'min_sq_distance', 'd2_refresh', 'candidate_potentials',
                                   'tiled', 'tile_rows', 'greedy_pass', 'apply_pending']}

# The root's private modules are shared infrastructure of every package.
ROOT_PRIVATE = {"fedcore._validation", "fedcore._config", "fedcore._moved", "fedcore._numba_cache"}


@pytest.mark.parametrize("path", sorted(OLD_ALL))
def test_old_import_paths_keep_their_names(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = importlib.import_module(path)
        missing = [name for name in OLD_ALL[path] if not hasattr(module, name)]
    assert missing == []


@pytest.mark.parametrize("path", sorted(MOVED_MODULES))
def test_moved_module_warns_and_reads_the_new_one(path):
    sys.modules.pop(path, None)
    with pytest.warns(DeprecationWarning, match=MOVED_MODULES[path].replace(".", r"\.")):
        module = importlib.import_module(path)
    new = importlib.import_module(MOVED_MODULES[path])
    for name in OLD_ALL.get(path, []):
        assert getattr(module, name) is getattr(new, name)


def test_moved_names_of_a_kept_package_warn():
    from fedcore.algorithms import feca
    with pytest.warns(DeprecationWarning, match="fedcore.algorithms.clients"):
        assert feca.client_kmeans is importlib.import_module(
            "fedcore.algorithms.clients").client_kmeans
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        feca.nope


def _imports(path, package):
    """(target module, name) of every ``from ... import`` in the module at ``path``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                yield target, alias.name


def test_no_private_name_is_imported_from_another_package():
    root = pathlib.Path(fedcore.__file__).parent
    crossings = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        package = ".".join(parts[:-1])
        for target, name in _imports(path, package):
            if not target.startswith("fedcore") or target in ROOT_PRIVATE:
                continue
            module_private = any(p.startswith("_") for p in target.split(".")[1:])
            name_private = name.startswith("_") and not name.startswith("__")
            same_package = target == package or target.rsplit(".", 1)[0] == package
            if (module_private or name_private) and not same_package:
                crossings.append(f"{'.'.join(parts)}: from {target} import {name}")
    assert crossings == []
