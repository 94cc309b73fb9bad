"""Code written only against the Array API standard runs on NdArrays: scikit-learn with
``array_api_dispatch=True`` and ``array_api_compat`` give numpy's results, on the device the
data started on (API.md §7, issue 12). scikit-learn needs ``SCIPY_ARRAY_API=1`` before SciPy
is imported, so the estimators run in a child process: one for numpy's results (the
reference) and every available backend's, with the same scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import available, run_json_child

import nnarray as nna

pytest.importorskip("sklearn")
pytest.importorskip("array_api_compat")

_CHILD = r"""
import json, os, sys, warnings
os.environ["SCIPY_ARRAY_API"] = "1"
warnings.simplefilter("ignore")
import numpy as np
import nnarray as nna
from sklearn import config_context
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import Ridge
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score
from sklearn.metrics.pairwise import cosine_similarity, euclidean_distances, rbf_kernel
from sklearn.mixture import GaussianMixture
from sklearn.preprocessing import LabelEncoder, MinMaxScaler, Normalizer, StandardScaler

rng = np.random.default_rng(0)
Xn = rng.standard_normal((40, 4)).astype(np.float32)
yn = (Xn[:, 0] + 0.5 * Xn[:, 1] > 0).astype(np.int64)
cases = {
    "MinMaxScaler": lambda X, y: MinMaxScaler().fit_transform(X),
    "StandardScaler": lambda X, y: StandardScaler().fit_transform(X),
    "Normalizer": lambda X, y: Normalizer().fit_transform(X),
    "PCA": lambda X, y: abs(PCA(n_components=2, svd_solver="full").fit_transform(X)),
    "LDA": lambda X, y: LinearDiscriminantAnalysis().fit(X, y).decision_function(X),
    "Ridge": lambda X, y: Ridge(alpha=1.0, solver="svd").fit(X, X[:, 0] * 2.0).predict(X),
    "LabelEncoder": lambda X, y: LabelEncoder().fit_transform(y),
    "r2_score": lambda X, y: r2_score(X[:, 0], X[:, 1]),
    "mean_squared_error": lambda X, y: mean_squared_error(X[:, 0], X[:, 1]),
    "accuracy_score": lambda X, y: accuracy_score(y, y[::-1]),
    "euclidean_distances": lambda X, y: euclidean_distances(X),
    "rbf_kernel": lambda X, y: rbf_kernel(X),
    "cosine_similarity": lambda X, y: cosine_similarity(X),
    # adds reg_covar to each covariances[k] in place through a view (issue 23)
    "GaussianMixture": lambda X, y: GaussianMixture(
        2, covariance_type="full", init_params="random_from_data", reg_covar=0.5,
        max_iter=5, random_state=0).fit(X).covariances_,
}


def run(where):
    # each case's result and its device, on numpy's arrays (where == "reference") or on
    # NdArrays on where
    if where == "reference":
        X, y = Xn, yn
    else:
        X, y = nna.asarray(Xn, device=where), nna.asarray(yn, device=where)
    out = {}
    with config_context(array_api_dispatch=True):
        for name, f in cases.items():
            r = f(X, y)
            dev = str(r.device) if isinstance(r, nna.NdArray) else None
            r = r.numpy() if isinstance(r, nna.NdArray) else np.asarray(r)
            out[name] = [np.asarray(r, dtype=np.float64).tolist(), dev]
    return out


print(json.dumps({"reference": run("reference"),
                  "got": {where: run(where) for where in sys.argv[1:]}}))
"""


@pytest.fixture(scope="module")
def runs() -> dict:
    """numpy's values and each available backend's, from one child."""
    return run_json_child(_CHILD, *available())


def test_scikit_learn_runs_on_ndarrays(backend, runs):
    """Each estimator and metric gives numpy's result, and array results stay on the
    device the data was made on."""
    reference, got = runs["reference"], runs["got"][backend]
    key = str(nna.Context.parse(backend))
    for name, (want, _) in reference.items():
        val, dev = got[name]
        np.testing.assert_allclose(np.asarray(val), np.asarray(want), rtol=2e-4, atol=2e-4,
                                   err_msg=name)
        if np.ndim(want) > 0:
            assert dev == key, f"{name}: result on {dev}, data on {key}"


def test_array_api_compat_namespace_and_device(backend):
    """array_api_compat sees nnarray as the namespace and the array's context as its
    device; standard-only code (a softmax) runs there."""
    import array_api_compat

    x = nna.asarray(np.arange(6, dtype=np.float32).reshape(2, 3), device=backend)
    xp = array_api_compat.array_namespace(x)
    assert xp is nna
    assert array_api_compat.device(x) == nna.Context.parse(backend)

    def softmax(a):  # written against the standard only
        e = xp.exp(a - xp.max(a, axis=-1, keepdims=True))
        return e / xp.sum(e, axis=-1, keepdims=True)

    y = softmax(x)
    assert y.device == nna.Context.parse(backend)
    ref = np.exp(np.arange(6.0).reshape(2, 3))
    np.testing.assert_allclose(y.numpy(), ref / ref.sum(-1, keepdims=True), rtol=1e-5)
