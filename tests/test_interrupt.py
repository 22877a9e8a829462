"""Ctrl-C during an experiment: one line saying what was saved and how to resume, status "interrupted"."""
from __future__ import annotations

import json


def test_ctrl_c_ends_cleanly(tmp_path, monkeypatch, capsys):
    import experiments.seed002_static as mod
    from experiments._runner import main

    def run(ctx):
        (ctx.csv_path).write_text("label,seed,instance,rep,samples,steps,correct,stopped,answer\n"
                                  'x,0,0,0,5,5,1,1,0\nx,0,0,1,6,6,1,1,0\n')
        raise KeyboardInterrupt

    monkeypatch.setattr(mod, "run", run)
    assert main(["seed002_static", "--out", str(tmp_path), "--quiet"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "interrupted" in err[0] and "2 replication(s) saved" in err[0] and "resume" in err[0]
    assert json.loads((tmp_path / "metadata.json").read_text())["status"] == "interrupted"
