"""Train the toy over-refusing LM (mvp_core/steer/toy.py) with a plain loop: loss on answer tokens only."""
from __future__ import annotations

import math
import random

from mvp_core.steer.collect import chat_texts
from mvp_core.steer.toy import ToyConfig, build_model, build_tokenizer, make_world


def _examples(tok, world):
    prompts = [p for fam in world.train.values() for p in fam]
    texts = chat_texts(tok, [p.text for p in prompts])
    out = []
    for p, t in zip(prompts, texts):
        a = tok(world.answers[p.text] + "<|im_end|>", add_special_tokens=False)["input_ids"]
        q = tok(t, add_special_tokens=False)["input_ids"]
        out.append((q + a, [-100] * len(q) + a))
    return out


def _batch(rows, pad: int):
    import torch
    n = max(len(r[0]) for r in rows)
    ids = torch.full((len(rows), n), pad, dtype=torch.long)
    lab = torch.full((len(rows), n), -100, dtype=torch.long)
    att = torch.zeros((len(rows), n), dtype=torch.long)
    for i, (x, y) in enumerate(rows):   # right padding is fine for a training forward
        ids[i, :len(x)] = torch.tensor(x)
        lab[i, :len(y)] = torch.tensor(y)
        att[i, :len(x)] = 1
    return ids, att, lab


def train_toy(cfg: ToyConfig | None = None, progress: bool = False):
    """(model in eval mode, tokenizer, world, final loss)."""
    import torch
    from tqdm import tqdm
    cfg = cfg or ToyConfig()
    world = make_world(cfg)
    # BPE over the rendered chat (template included) so prompts are short: speed on 2 CPUs.
    prompts = [p.text for fam in (*world.train.values(), *world.heldout.values()) for p in fam]
    tok = build_tokenizer([])
    texts = chat_texts(tok, prompts)
    tok = build_tokenizer([t + world.answers[p] + "<|im_end|>" for t, p in zip(texts, prompts)])
    model = build_model(tok, cfg)
    rows = _examples(tok, world)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 20) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * s / cfg.steps))))
    rng = random.Random(cfg.seed)
    model.train()
    loss = float("nan")
    bar = tqdm(range(cfg.steps), desc="toy LM", disable=not progress)
    for _ in bar:
        ids, att, lab = _batch(rng.sample(rows, cfg.batch_size), tok.pad_token_id)
        logits = model(input_ids=ids, attention_mask=att).logits[:, :-1]
        loss_t = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab[:, 1:].reshape(-1),
                                                   ignore_index=-100, label_smoothing=cfg.label_smoothing)
        opt.zero_grad()
        loss_t.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        loss = float(loss_t.detach())
        bar.set_postfix(loss=f"{loss:.3f}")
    model.eval()
    return model, tok, world, loss
