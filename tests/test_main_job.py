"""The README's main job runs end to end and its numbers are sane."""
import csv

from experiments._runner import main


def test_seed000_table1_quick(tmp_path):
    assert main(["seed000_table1", "--quick", "--quiet", "--out", str(tmp_path)]) == 0
    for f in ("results.csv", "metadata.json", "table1.png"):
        assert (tmp_path / f).exists()
    rows = list(csv.DictReader(open(tmp_path / "results.csv")))
    assert len(rows) == 40  # 2 algorithms x 20 replications
    assert all(r["stopped"] == "1" for r in rows)
    # at delta = 0.05 the chance of >= 3 errors in 40 delta-correct runs is < 0.08
    assert sum(r["correct"] == "0" for r in rows) <= 2
    oracle = [int(r["samples"]) for r in rows if "Oracle" in r["label"]]
    # sigma^2 T* kl(delta, 1 - delta) is about 59 on this instance; the paper's Oracle mean is 476
    assert 59 < sum(oracle) / len(oracle) < 2000
