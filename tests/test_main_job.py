"""The README's main job runs end to end and its numbers are sane."""
import csv

from experiments._runner import main


def test_seed000_table1_quick(tmp_path):
    assert main(["seed000_table1", "--quick", "--quiet", "--out", str(tmp_path)]) == 0
    for f in ("results.csv", "metadata.json", "table1.png"):
        assert (tmp_path / f).exists()
    rows = list(csv.DictReader(open(tmp_path / "results.csv")))
    assert len(rows) == 60  # 3 configurations (LT&S paper text, LT&S released code, Oracle) x 20
    assert all(r["stopped"] == "1" for r in rows)
    # delta-correctness of the two LT&S rows (the Oracle's check is correct by construction):
    # H0 "error rate <= 0.05" not rejected at level 1e-3 (one-sided exact binomial test)
    from jaxbandits.stats import binomial_test_upper

    lts = [r for r in rows if "Oracle" not in r["label"]]
    assert len(lts) == 40
    assert binomial_test_upper(sum(r["correct"] == "0" for r in lts), len(lts), 0.05) > 1e-3
    oracle = [int(r["samples"]) for r in rows if "Oracle" in r["label"]]
    # sigma^2 T* kl(delta, 1 - delta) is about 59 on this instance; the paper's Oracle mean is 476
    assert 59 < sum(oracle) / len(oracle) < 2000
