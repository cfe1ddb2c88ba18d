"""Prompt ids from `fastokens`, the Rust BPE tokenizer that vLLM's Rust frontend loads,
where it gives the Hugging Face tokenizer's ids on a fixed sample.

Encoding the prompt is most of what the gateway does before the engine sees a request: a
1,024-token prompt of the Qwen3-sized test vocabulary took 3.2 ms through `tokenizers`
on the 2-core CI machine (1.4-2.7 ms in pieces, `app.encode_pieces`) and 0.08 ms through
`fastokens` (medians of 100 fresh prompts, `bench.encode_speed`); a 650,000-character
text 1,229 against 25-53 ms. `fastokens` releases the GIL while it encodes.

`attach` loads it from the tokenizer's own `tokenizer.json` (`to_str()`) once per
process, and keeps it only where it gives `tokenizer.encode`'s ids on `check_texts`: every
added token amid text, whitespace runs, digits, contractions, accents composed and not,
CJK, emoji, zero-width characters, and texts decoded from random ids. Otherwise, or
where `fastokens` is not installed, prompts go through `tokenizers` as before. It is
used for `add_special_tokens=False` only, which is how the gateway encodes rendered
prompts. The Qwen3-sized vocabulary costs about 80 MiB of memory per process (48 MiB
loaded, the rest at the first encode; forked HTTP workers share the 48 their fork
server `preload`ed), plus 16-20 MiB for the encode thread if a text long enough goes there
(`app.encode.FAST_OFF_LOOP_CHARS`); the tiny test tokenizer's 1,024 ids 29 MiB (the
gateway's peak RSS on the CPU box 626 against 597 MiB). Unless the user says
(`--fast-tokenizer`), it is used with a GPU only: on the 2-core CPU box the engine's
prefill of a 128-token prompt (7-24 ms) dwarfs its encode (0.1-0.3 ms), and the
issue's CPU goal keeps the front end's memory below `vllm serve`'s.
"""

from __future__ import annotations

import contextlib
import random
import weakref
from typing import Any, Final

from app.text_stream import check_ids

FIXED_TEXTS: Final[tuple[str, ...]] = (
    "Hello, world! How are you today?",
    "  leading spaces, trailing spaces   ",
    "tabs\tand\nnew\n\nlines\r\n\r\nand  double  spaces\n\n\n",
    "don't I'll WE'RE they've she'd it's you'D",
    "digits 1234567890 3.14159 -42 1e-6 0x1F 2026-12-03",
    "café naïve e\u0301 n\u0303 Å \u212b \ufb01 \u1e9b\u0323",
    "你好，世界。こんにちは 안녕하세요 Привет мир",
    "emoji 👋🏽 👩‍👩‍👧 🇫🇷 ✨",
    "zero\u200bwidth\u200c\u200d\ufeff\u2060 and nbsp\u00a0here",
    "code: def f(x):\n    return x ** 2  # comment\n\tprint(f'{x!r}')",
    "punctuation!!! ??? ... --- *** ### @@@ $$$ %%% ^^^ &&& ((()))",
    "",
    " ",
    "\n",
)

_FAST: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_PRELOADED: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def fast_encoder(tokenizer: Any) -> Any | None:
    """The `fastokens.Tokenizer` attached to `tokenizer`, or None."""
    try:
        return _FAST.get(tokenizer)
    except TypeError:  # not weak-referenceable: never attached
        return None


def attach(tokenizer: Any) -> str | None:
    """Load `fastokens` for `tokenizer` and keep it where it agrees with `tokenizer.encode`
    on `check_texts`; None when attached (now or before), else why not."""
    if fast_encoder(tokenizer) is not None:
        return None
    fast, why_not = load(tokenizer)
    if fast is None:
        return why_not
    try:
        _FAST[tokenizer] = fast
    except TypeError:
        return "the tokenizer can't be remembered"
    return None


def preload(tokenizer: Any) -> bool:
    """Load `fastokens` for `tokenizer` without checking it, for `load` to take up later in
    this process or in a process forked from it (the fork server, `app.shared_tokenizer`:
    the workers share its 48 MiB for Qwen3's vocabulary). Nothing is encoded: `fastokens`
    starts its threads at the first encode, and the fork server must have none when it
    forks. Whether it loaded."""
    try:
        fast = _from_backend(tokenizer)
        _PRELOADED[tokenizer] = fast
    except Exception:  # not installed, no backend, a tokenizer.json it can't load
        return False
    return True


def preloaded(tokenizer: Any) -> Any | None:
    """The `fastokens` `preload` made for a tokenizer with `tokenizer`'s backend (a forked
    worker's renderer copies the tokenizer its fork server loaded, sharing its backend)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    for known, fast in list(_PRELOADED.items()):
        if backend is not None and getattr(known, "backend_tokenizer", None) is backend:
            return fast
    return None


def _from_backend(tokenizer: Any) -> Any:
    import fastokens

    return fastokens.Tokenizer.from_json_str(tokenizer.backend_tokenizer.to_str())


def load(tokenizer: Any) -> tuple[Any | None, str]:
    """A `fastokens.Tokenizer` for `tokenizer` (the one `preload` made, if any) that gives
    its ids on `check_texts`, without attaching it; else None and why not."""
    try:
        import fastokens  # noqa: F401 - only whether it is there
    except ImportError:
        return None, "fastokens is not installed"
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not hasattr(backend, "to_str"):
        return None, "the tokenizer has no tokenizers backend"
    try:
        fast = preloaded(tokenizer)
        if fast is None:
            fast = _from_backend(tokenizer)
        mismatch = first_mismatch(tokenizer, fast, check_texts(tokenizer))
    except Exception as exc:  # a tokenizer.json it can't load, or an error while checking
        return None, f"fastokens failed on this tokenizer: {exc}"
    if mismatch is not None:
        return None, f"fastokens gives other ids than the tokenizer for {mismatch!r}"
    return fast, ""


def choose(tokenizer: Any, wanted: bool | None, device_type: str = "") -> str:
    """Attach `fastokens` to `tokenizer` when `wanted` (None: auto, wanted unless the
    engine's `device_type` is "cpu"), else detach it; what encodes the prompts now, in
    words for the log."""
    if not is_wanted(wanted, device_type):
        detach(tokenizer)
        if wanted is False:
            return "tokenizers (--no-fast-tokenizer)"
        return "tokenizers (auto: fastokens off on CPU; --fast-tokenizer turns it on)"
    why_not = attach(tokenizer)
    if why_not is not None:
        return f"tokenizers: {why_not}"
    inherited = preloaded(tokenizer)
    if inherited is not None and fast_encoder(tokenizer) is inherited:
        return "fastokens (loaded by the fork server)"
    return "fastokens"


def is_wanted(wanted: bool | None, device_type: str) -> bool:
    """`--fast-tokenizer`'s choice: on when asked, or by default with an accelerator."""
    return wanted is True or (wanted is None and device_type != "cpu")


def detach(tokenizer: Any) -> None:
    """Encode `tokenizer`'s prompts through `tokenizers` again (tests, benchmarks)."""
    with contextlib.suppress(TypeError):  # not weak-referenceable: never attached
        _FAST.pop(tokenizer, None)


def encode_texts(fast: Any, texts: list[str]) -> list[list[int]]:
    """Each text's ids, without the tokenizer's own special tokens, one after another on
    this thread: `fastokens` keeps 16-20 MiB of state per thread that has encoded, and its
    `encode_batch` spreads over a thread pool of one thread per core (on the H200's 16
    cores the four HTTP workers' memory grew by 1 GiB that way)."""
    return [list(fast.encode(text, add_special_tokens=False).ids) for text in texts]


def first_mismatch(tokenizer: Any, fast: Any, texts: list[str]) -> str | None:
    """The first text whose ids differ between `tokenizer.encode` and `fast`, else None."""
    ours = encode_texts(fast, texts)
    for text, ids in zip(texts, ours, strict=True):
        if list(tokenizer.encode(text, add_special_tokens=False)) != ids:
            return text
    return None


def check_texts(tokenizer: Any) -> list[str]:
    """`FIXED_TEXTS`, every added token inside text (alone, between words, twice in a row,
    as a chat turn), and texts decoded from random ids (`app.text_stream.check_ids`)."""
    added = [
        token.content if hasattr(token, "content") else str(token)
        for token in (getattr(tokenizer, "added_tokens_decoder", None) or {}).values()
    ]
    texts = list(FIXED_TEXTS)
    for token in added:
        texts += [token, f"a{token}b", f" {token} x", f"{token}{token}\n{token}\n\n hi"]
    if added:
        texts.append("\n".join(f"{token}user\nhi there{token}" for token in added))
    rng = random.Random(0)
    for ids in check_ids(tokenizer):
        text = tokenizer.decode(ids, skip_special_tokens=False)
        texts.append(text)
        cut = rng.randrange(len(text) + 1)
        texts.append(text[:cut] + " " + text[cut:])
    texts.append(" ".join(FIXED_TEXTS))
    return texts
