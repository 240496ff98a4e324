"""Energy steering ranks and gates its layers on balanced scores (docs/steer.md):
steering data rarely has classes of equal size, and plain accuracy rewards calling every state the
larger class. The threshold, best epoch and ranking use balanced accuracy; AUROC and balanced
accuracy are reported per layer on the test split."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mvp_core.stats.classify import auroc, balanced_accuracy
from mvp_core.steer.metrics import accuracy, balanced_accuracy_at, calibrate
from mvp_core.steer.train import train_bank


def test_auroc_and_balanced_accuracy_known_values():
    bad = np.array([False, False, True, True])
    assert auroc([0.1, 0.2, 0.8, 0.9], bad) == 1.0 and auroc([0.9, 0.8, 0.2, 0.1], bad) == 0.0
    assert auroc([0.5, 0.5, 0.5, 0.5], bad) == 0.5                       # ties count half
    assert auroc([0.1, 0.6, 0.5, 0.9], bad) == 0.75
    assert auroc([1.0, 2.0], [False, False]) == 0.5                     # one class only: no information
    many = np.r_[np.zeros(95, bool), np.ones(5, bool)]
    assert balanced_accuracy(np.zeros(100, bool), many) == 0.5          # the constant rule is at chance...
    assert accuracy(np.zeros(100), many, 0.5) == 0.95                   # ...which plain accuracy calls 95%
    assert balanced_accuracy([True, False, True, True], [True, False, False, True]) == 0.75


def test_calibrated_threshold_separates_the_rare_class():
    """With 5% bad states, the plain-accuracy cut calls everything good; the balanced cut does not."""
    rng = np.random.default_rng(0)
    bad = np.r_[np.zeros(380, bool), np.ones(20, bool)]
    energy = np.where(bad, 1.0, -1.0) + rng.normal(0, 1.0, len(bad))
    thr, bal = calibrate(energy, bad)
    assert bal == pytest.approx(balanced_accuracy_at(energy, bad, thr))
    assert bal > 0.8 and (energy[bad] > thr).mean() > 0.7             # most bad states are called bad
    # no cut does better, the all-good cut included
    cuts = np.r_[energy.min() - 1, np.sort(energy) + 1e-9]
    assert bal >= max(balanced_accuracy_at(energy, bad, c) for c in cuts) - 1e-12


@pytest.fixture(scope="module")
def unbalanced_bank(torch_one_thread):
    """3 layers, 5% bad states: layer 0 is noise, layer 1 separates the classes (overlapping), layer 2
    is noise. A rule that calls every state good scores 95% plain accuracy on any layer: ranked by plain
    accuracy (the code before) every layer tied at that rule and noise layer 0 came first."""
    rng = np.random.default_rng(3)
    n, d = 1000, 16
    bad = rng.random(n) < 0.05
    states = torch.tensor(rng.normal(size=(n, 3, d)), dtype=torch.float32)
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    states[:, 1, :] += torch.tensor(np.where(bad, 0.8, -0.8)[:, None] * u, dtype=torch.float32)
    from mvp_core.steer.config import EnergyConfig
    cfg = EnergyConfig(hidden=[32], lr=3e-3, epochs=25, batch_size=64, val_frac=0.3, test_frac=0.3, seed=0)
    return train_bank(states, bad, cfg), bad


def test_ranking_picks_the_layer_that_separates_unbalanced_classes(unbalanced_bank):
    bank, bad = unbalanced_bank
    m = bank.metrics
    assert bad.mean() < 0.07
    assert bank.ranking()[0] == 1
    # the separating layer: above chance on the held-out test split, balanced and by AUROC
    assert m[1].test_bal_acc > 0.65 and m[1].test_auroc > 0.75
    # noise layers: near chance when balanced, although their plain accuracy looks high
    for li in (0, 2):
        assert m[li].test_bal_acc < 0.65 and m[li].test_auroc < 0.7
        assert m[li].val_bal_acc < m[1].val_bal_acc
    # the gate's threshold is the balanced one, not the all-good cut a plain-accuracy threshold takes here
    assert m[1].val_bal_acc > 0.7 and m[1].val_acc < 0.95


def test_train_table_reports_balanced_accuracy_and_auroc_per_layer(tmp_path, capsys, torch_one_thread):
    """`mvp steer train` prints both scores per layer, on validation (ranking) and test (report)."""
    from app.cli.main import main as mvp
    from mvp_core.steer.states import save_states
    rng = np.random.default_rng(5)
    n = 200
    labels = np.r_[np.zeros(170, bool), np.ones(30, bool)]
    states = torch.tensor(rng.normal(size=(n, 2, 8)), dtype=torch.float32)
    states[:, 1, 0] += torch.tensor(np.where(labels, 2.0, -2.0), dtype=torch.float32)
    save_states(tmp_path / "s.pt", states, labels, ["bad" if b else "good" for b in labels],
                [str(i) for i in range(n)], [str(i) for i in range(n)], "toy")
    assert mvp(["steer", "train", str(tmp_path / "s.pt"), "--out", str(tmp_path / "b.pt"), "--hidden", "16",
                "--epochs", "10", "--lr", "3e-3", "--batch-size", "32", "--top-k", "1"]) == 0
    captured = capsys.readouterr()
    head = captured.out.splitlines()[0].split()
    for col in ("val_bal_acc", "val_auroc", "test_bal_acc", "test_auroc", "val_acc", "test_acc"):
        assert col in head
    rows = {int(r.split()[0]): r.split() for r in captured.out.splitlines()[2:4]}
    assert rows[1][1] == "1"                                  # layer 1 (the separating one) ranks first
    assert float(rows[1][head.index("test_bal_acc")]) > 0.8
    assert "steers layers [1]" in captured.out
    assert "no model fingerprint" in captured.err            # states saved without one: said, not silent
