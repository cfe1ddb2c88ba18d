"""The synthetic Qwen3-format chats that `think_model` trains on: user turns in English,
Chinese or random characters, system prompts, tools, several turns, long prompts, each
rendered with the tiny model's chat template and followed by the target output (see the
docstring of `tests.integration.think_model` for the three shapes).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any, Final

THINK_TEXT: Final[str] = (
    "well, i think about the user question: first we read it; next compute one result "
    "and tell if that can be more helpful to you in a short reply"
)
"""The reasoning the model emits between ``<think>\\n`` and ``\\n</think>``."""

ANSWER_TEXT: Final[str] = "the answer is 42."
"""The final answer the model emits (after ``</think>\\n\\n``, before ``<|im_end|>``)."""

THINK_OPEN_TEXT: Final[str] = "<think>\n"
THINK_CLOSE_TEXT: Final[str] = "\n</think>\n\n"
EOS_TEXT: Final[str] = "<|im_end|>"
BATCH_SIZE: Final[int] = 16
LONG_EVERY: Final[int] = 4
LONG_BATCH_SIZE: Final[int] = 4

QUESTIONS: Final[tuple[str, ...]] = (
    "hello",
    "Hello!",
    "hi",
    "Hi, who are you?",
    "What is 12 plus 30?",
    "What is the capital of France?",
    "Tell me a joke.",
    "Write a short poem about the sea.",
    "How do I reverse a list in Python?",
    "Explain quantum entanglement in three sentences.",
    "What's the weather like today?",
    "Can you help me write an email to my team?",
    "Why is the sky blue?",
    "Summarize the history of the internet.",
    "What is a large language model?",
    "Give me three tips for learning to code.",
    "How many legs does a spider have?",
    "Translate 'good morning' into French.",
    "What is 7 times 8?",
    "Is 17 a prime number?",
    "What does HTTP stand for?",
    "Describe the architecture of Qwen3-0.6B.",
    "Say something nice.",
    "test",
    "ping",
    "1+1=?",
    "What time is it?",
    "Please count from one to five.",
    "你好",
    "你好！",
    "你是谁？",
    "请用三句话解释量子纠缠",
    "Qwen3-0.6B的架构特点是什么？",
    "今天天气怎么样？",
    "请帮我写一段关于天气的介绍。",
    "什么是大语言模型？",
    "十二加三十等于多少？",
    "请写一首关于春天的诗。",
    "如何学习编程？",
    "给我讲个笑话吧",
    "北京是中国的首都吗？",
    "请解释一下什么是机器学习。",
    "谢谢你！",
    "Python 和 JavaScript 有什么区别？",
    "用一句话介绍你自己",
    "Bonjour, comment ça va ?",
    "¿Cómo estás?",
    "Привет, как дела?",
    "😀 what's up?",
)
"""Fixed user questions; random ones are generated too (see `_random_text`)."""

SYSTEMS: Final[tuple[str, ...]] = (
    "You are a helpful assistant.",
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
    "Answer briefly.",
    "You are a friendly bot that likes numbers.",
    "你是一个有帮助的助手。",
    "请用中文回答。",
    "Always think step by step.",
)

HISTORY_REPLIES: Final[tuple[str, ...]] = (
    ANSWER_TEXT,
    "Hello! How can I help you today?",
    "Sure, here you go.",
    "你好！请问有什么可以帮你的吗？",
    "I am not sure.",
    "OK.",
)
"""Earlier assistant turns (rendered without their reasoning, as the template does)."""

_WORD_TEXT: Final[str] = (
    "the a an is are what how why who when where which can you me my your it this that "
    "please tell write explain give make help find list number code python model think "
    "step answer question reply weather city time day today tomorrow one two three four "
    "ten hundred hello hi thanks good bad big small new old fast slow red blue sky sea "
    "computer phone internet server request response token engine user assistant system "
    "Paris Beijing Qwen GPU CPU API JSON HTTP data file test ping foo bar"
)
_WORDS: Final[tuple[str, ...]] = tuple(_WORD_TEXT.split())
_HAN: Final[str] = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过"
    "家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本"
    "见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己"
    "话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平"
    "请解释量子纠缠架构特点模型天气编程首都笑话诗春谢"
)
TOOLS: Final[list[dict[str, Any]]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city name"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate an arithmetic expression",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    },
]
"""Tool signatures some prompts carry (the model still just thinks and answers)."""

_PUNCT: Final[tuple[str, ...]] = ("", "", "?", "!", ".", "？", "。", "！", "...")


def _random_char(rng: random.Random) -> str:
    """ASCII, Latin/IPA, CJK or emoji."""
    ranges = ((33, 126), (0xA1, 0x2FF), (0x4E00, 0x9FFF), (0x1F600, 0x1F64F))
    return chr(rng.choice([rng.randint(low, high) for low, high in ranges]))


def _random_text(rng: random.Random) -> str:
    """A random short user message: English words, Chinese characters, digits or bytes."""
    kind = rng.random()
    if kind < 0.35:
        text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 12)))
        if rng.random() < 0.5:
            text = text[:1].upper() + text[1:]
    elif kind < 0.65:
        text = "".join(rng.choice(_HAN) for _ in range(rng.randint(1, 16)))
    elif kind < 0.8:
        parts = [rng.choice(_WORDS) if rng.random() < 0.5 else rng.choice(_HAN) for _ in range(8)]
        text = "".join(parts[: rng.randint(1, 8)])
    elif kind < 0.9:
        text = " ".join(
            str(rng.randint(0, 10 ** rng.randint(1, 6))) for _ in range(rng.randint(1, 4))
        )
    else:  # arbitrary printable characters, any script
        text = "".join(_random_char(rng) for _ in range(rng.randint(1, 10)))
    return text + rng.choice(_PUNCT)


def _user_text(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(QUESTIONS)
    return _random_text(rng)


def _long_text(rng: random.Random) -> str:
    """A long message (roughly 100 to 700 tokens) of random short texts."""
    target = rng.randint(120, 600)
    parts: list[str] = []
    while sum(len(part.encode()) for part in parts) < target:
        parts.append(_user_text(rng))
    return rng.choice((" ", "\n", "")).join(parts)


def _messages(rng: random.Random, long: bool = False) -> list[dict[str, str]]:
    """A chat ending with a user turn; `long` ones have a long turn or many turns."""
    messages: list[dict[str, str]] = []
    shape = rng.randrange(3) if long else -1
    if shape == 0:
        messages.append({"role": "system", "content": _long_text(rng)})
    elif rng.random() < 0.3:
        messages.append({"role": "system", "content": rng.choice(SYSTEMS)})
    turns = rng.randint(3, 8) if shape == 1 else rng.randint(1, 2) if rng.random() < 0.25 else 0
    for _ in range(turns):
        messages.append({"role": "user", "content": _user_text(rng)})
        reply = rng.choice(HISTORY_REPLIES) if rng.random() < 0.7 else _random_text(rng)
        messages.append({"role": "assistant", "content": reply})
    messages.append({"role": "user", "content": _long_text(rng) if shape == 2 else _user_text(rng)})
    return messages


def render_prompt(
    tokenizer: Any,
    messages: list[dict[str, str]],
    thinking: bool | None,
    tools: list[dict[str, Any]] | None = None,
) -> str:
    """The generation prompt of `messages` (thinking None: enable_thinking left unset)."""
    kwargs: dict[str, Any] = {} if thinking is None else {"enable_thinking": thinking}
    if tools:
        kwargs["tools"] = tools
    text = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True, **kwargs
    )
    return str(text)


class Examples:
    """Token ids and loss masks of synthetic chats, drawn from one seeded generator."""

    def __init__(self, tokenizer: Any, seed: int) -> None:
        self.tokenizer = tokenizer
        self.rng = random.Random(f"think-model-data-{seed}")
        self.think_open = self._encode(THINK_OPEN_TEXT)
        self.think = self._encode(THINK_TEXT)
        self.think_close = self._encode(THINK_CLOSE_TEXT)
        self.answer = self._encode(ANSWER_TEXT + EOS_TEXT)

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def draw(self, long: bool = False) -> tuple[list[int], list[bool]]:
        """One chat: (input ids, whether each position is a trained assistant token)."""
        rng = self.rng
        messages = _messages(rng, long)
        with_tools = rng.random() < (0.3 if long else 0.05)
        tools = TOOLS[: rng.randint(1, len(TOOLS))] if with_tools else None
        mode = rng.random()
        segments: list[tuple[list[int], bool]] = []
        if mode < 0.35:  # thinking: the full reasoning, then the answer
            prompt = render_prompt(self.tokenizer, messages, rng.choice((None, True)), tools)
            segments.append((self._encode(prompt), False))
            segments.append((self.think_open + self.think + self.think_close + self.answer, True))
        elif mode < 0.55:  # non-thinking: the prompt ends with the empty think block
            prompt = render_prompt(self.tokenizer, messages, False, tools)
            segments.append((self._encode(prompt), False))
            segments.append((self.answer, True))
        else:  # thinking, cut by a budget after `cut` reasoning tokens
            prompt = render_prompt(self.tokenizer, messages, rng.choice((None, True)), tools)
            cut = rng.randint(0, len(self.think))
            segments.append((self._encode(prompt), False))
            segments.append((self.think_open + self.think[:cut], True))
            segments.append((self.think_close, False))  # forced by the gateway
            segments.append((self.answer, True))
        ids: list[int] = []
        trained: list[bool] = []
        for tokens, flag in segments:
            ids += tokens
            trained += [flag] * len(tokens)
        return ids, trained

    def batches(self) -> Iterator[list[tuple[list[int], list[bool]]]]:
        """Endless training batches, in rounds of LONG_EVERY steps.

        A round is LONG_EVERY - 1 batches of short chats (drawn together and sorted by
        length, so that little is padded) and one small batch of long chats.
        """
        while True:
            pool = [self.draw() for _ in range((LONG_EVERY - 1) * BATCH_SIZE)]
            pool.sort(key=lambda example: len(example[0]))
            short = [pool[i : i + BATCH_SIZE] for i in range(0, len(pool), BATCH_SIZE)]
            self.rng.shuffle(short)
            yield from short
            yield [self.draw(long=True) for _ in range(LONG_BATCH_SIZE)]
