"""Sphinx configuration of fedcore's documentation site.

Build it with ``python -m sphinx -b html -W --keep-going docs <output directory>``. The API
reference is rendered from the numpydoc docstrings; the Markdown pages of ``docs/`` and the
README are included as they are through MyST.
"""
import functools
import importlib
import os
import re
import sys

# The package documented is the one of this work tree, even when another fedcore is installed.
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
sys.path.insert(0, ROOT)

# Importing fedcore compiles nothing (its Numba kernels compile lazily, on first call) and
# autodoc calls none of them; do not let a documentation build touch the user's kernel cache.
os.environ.setdefault("FEDCORE_NUMBA_CACHE", "0")

import fedcore  # noqa: E402
import sphinx.ext.autosummary as _autosummary  # noqa: E402

project = "fedcore"
author = "fedcore developers"
copyright = "fedcore developers, BSD-3-Clause"
version = release = fedcore.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_parser",
]
# sphinx.ext.intersphinx is left out on purpose: builds must work without network access.

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = []

# -- MyST (the Markdown pages and the README) ---------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# -- autodoc / autosummary / napoleon -----------------------------------------------------------
autosummary_generate = False  # the API pages are written by hand: no stub files in the tree
# The summary tables show each docstring's first sentence; the papers' "Alg. 3", "eq. (33)",
# "Def. 3.1"... do not end one.
_autosummary.WELL_KNOWN_ABBREVIATIONS = tuple(_autosummary.WELL_KNOWN_ABBREVIATIONS) + (
    "Alg.", "eq.", "eqs.", "Def.", "Fig.", "Sec.", "i.i.d.")
autodoc_default_options = {
    "members": True,
    "member-order": "bysource",
    "show-inheritance": True,
}
autodoc_typehints = "none"  # the numpydoc "Parameters" sections carry the types
autodoc_class_signature = "mixed"
autoclass_content = "class"
autodoc_preserve_defaults = True
add_module_names = False
python_display_short_literal_types = True

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_include_init_with_doc = False
napoleon_use_rtype = False
napoleon_custom_sections = [
    # fedcore's docstrings list attributes the numpydoc way, often with the description on the
    # type line ("n_iter_ : int, sweeps run") or several names on one line. Rendered like the
    # Parameters (bold name, type, description) they read as written; as ``:ivar:`` fields the
    # names and types become cross-references that break on names such as ``n_iter_``.
    ("Attributes", "params_style"),
    # A section of its own in ``fedcore.federation.partition`` (the partition schemes).
    "Schemes",
]

# -- HTML ---------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"fedcore {release}"
html_static_path = []
html_show_sourcelink = False

# -- Warnings -----------------------------------------------------------------------------------
# Every warning fails the build (-W). Targeted exceptions, each with its reason, go here.

# Docstrings write set sizes as |R| (a removal batch) and |P| (the participants). In
# reStructuredText |name| is a substitution reference; these definitions render both as written.
rst_prolog = r"""
.. |R| replace:: \|R\|
.. |P| replace:: \|P\|
"""

# -- Coverage of the public API -----------------------------------------------------------------
# Every name of these modules' ``__all__`` must be documented on an API page; a name added to
# ``__all__`` without a page entry fails the build (a warning under -W).
DOCUMENTED_MODULES = [
    "fedcore.algorithms.kmeans",
    "fedcore.algorithms.mufc",
    "fedcore.algorithms.vfl",
    "fedcore.algorithms.f3km",
    "fedcore.algorithms.feca",
    "fedcore.algorithms.baselines",
    "fedcore.algorithms.base",
    "fedcore.algorithms.clients",
    "fedcore.federation",
    "fedcore.federation.protocol",
    "fedcore.secagg",
    "fedcore.datasets",
    "fedcore.metrics",
    "fedcore.persistence",
    "fedcore.integrations.flower",
    "fedcore.integrations.flower.roles",
]


def _check_api_coverage(app, env):
    from sphinx.util import logging

    logger = logging.getLogger("fedcore.api")
    documented = set(env.get_domain("py").objects)
    for modname in DOCUMENTED_MODULES:
        if modname not in documented:
            logger.warning("API reference: module %s has no page", modname)
        for name in importlib.import_module(modname).__all__:
            if f"{modname}.{name}" not in documented:
                logger.warning("API reference: %s.%s is public (in __all__) but not documented",
                               modname, name)
    # fedcore.__all__: each name is documented under its family package and listed on the API
    # index page under that name; __version__ is documented on that page itself.
    index = os.path.join(app.srcdir, "api", "index.rst")
    with open(index, encoding="utf-8") as f:
        listed = set(re.findall(r"^\s+~?([\w.]+)\s*$", f.read(), flags=re.M))
    for name in fedcore.__all__:
        full = "fedcore.__version__" if name == "__version__" else \
            _public_homes().get(id(getattr(fedcore, name)))
        if full is None or full not in documented:
            logger.warning("API reference: fedcore.%s is not documented", name)
        elif name != "__version__" and full not in listed:
            logger.warning("API reference: fedcore.%s is not listed on api/index.rst (as %s)",
                           name, full)


@functools.lru_cache(maxsize=None)
def _public_homes():
    """Map id(object) -> the name it is documented under, for the objects of DOCUMENTED_MODULES."""
    homes = {}
    for modname in DOCUMENTED_MODULES:
        module = importlib.import_module(modname)
        homes[id(module)] = modname
        for name in module.__all__:
            homes.setdefault(id(getattr(module, name)), f"{modname}.{name}")
    return homes


def _documented_name(target, homes):
    """The documented name of ``target``, a dotted path to a fedcore object under another
    name (``fedcore.KMeans``, ``fedcore.algorithms.f3km.cdkm.BCDKM``, ``fedcore.load``...)."""
    import warnings

    parts = target.split(".")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # old import paths warn (fedcore._moved)
        for i in range(len(parts), 0, -1):  # the longest importable module prefix
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            found = homes.get(id(obj)) if i > 1 else None
            for j in range(i, len(parts)):
                try:
                    obj = getattr(obj, parts[j])
                except AttributeError:
                    return None
                found = homes.get(id(obj), f"{found}.{parts[j]}" if found else None)
            return found
    return None


def _resolve_other_paths(app, env, node, contnode):
    """Docstrings may name an object by another public path than the one it is documented
    under, e.g. ``:class:`fedcore.KMeans``` for :class:`fedcore.algorithms.kmeans.KMeans`
    or its defining module's path; such references are resolved to the documented name."""
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("fedcore."):
        return None
    name = _documented_name(target, _public_homes())
    if name is None or name == target:
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], name, node,
                               contnode)


# Module constants have no docstring of their own (autodoc would show the docstring of their
# type, ``dict`` or ``str``); these are their descriptions on the API pages.
CONSTANT_DOCS = {
    "fedcore.__version__": "The version of fedcore.",
    "fedcore.datasets.S_SET_LEVELS":
        "The spread of the clusters at each level of :func:`make_s_sets` (1 to 4, S1 to S4): "
        "the geometric-mean scale of a cluster as a fraction of the minimum distance between "
        "true centers.",
    "fedcore.datasets.MUFC_SHAPES":
        "The shapes of the data sets of [MUFC] Appendix M, by name (``\"celltype\"``, "
        "``\"postures\"``...): tuples ``(n, d, K, cluster sizes, L)`` of points, features, "
        "clusters, the size of each cluster (None: equal sizes) and clients. "
        ":func:`load_mufc_standin` draws synthetic data of these shapes.",
    "fedcore.integrations.flower.roles.MESSAGE_TYPE":
        "The Flower message type of every message the generic adapter sends (``\"train\"``).",
    "fedcore.integrations.flower.roles.HELLO":
        "The wire type of the transport's question to each node before the first round (which "
        "partition it holds); not a protocol message, not counted.",
    "fedcore.federation.SERVER":
        "The party id of the server in a :class:`LedgerEntry` and the :class:`CommLedger` "
        "(clients and parties are ints).",
    "fedcore.persistence.FORMAT":
        "The ``\"format\"`` entry of every file :func:`save` writes.",
    "fedcore.persistence.VERSION":
        "The version of the file format this fedcore writes (the ``\"version\"`` entry); "
        ":func:`load` refuses a file of a newer version.",
}


def _describe_constants(app, what, name, obj, options, lines):
    if what == "data" and name in CONSTANT_DOCS:
        lines[:] = [CONSTANT_DOCS[name], ""]
    elif what == "data" and type(obj).__module__ == "builtins":
        doc = (type(obj).__doc__ or "").strip().splitlines()
        if doc and lines and lines[0].strip() == doc[0].strip():
            from sphinx.util import logging
            logging.getLogger("fedcore.api").warning(
                "API reference: %s has no description; add it to CONSTANT_DOCS", name)
            lines.clear()


def _skip_tuple_field_aliases(app, what, name, obj, skip, options):
    """NamedTuple fields ("Alias for field number 0") are listed in the class signature and in
    the class's own Attributes section."""
    if what == "class" and (getattr(obj, "__doc__", None) or "").startswith(
            "Alias for field number"):
        return True
    return None


def _drop_object_base(app, name, obj, options, bases):
    """``Bases: object`` says nothing; show the bases of classes that have real ones."""
    bases[:] = [base for base in bases if base is not object]


def setup(app):
    app.connect("autodoc-process-docstring", _describe_constants)
    app.connect("autodoc-skip-member", _skip_tuple_field_aliases)
    app.connect("autodoc-process-bases", _drop_object_base)
    app.connect("env-check-consistency", _check_api_coverage)
    app.connect("missing-reference", _resolve_other_paths)
