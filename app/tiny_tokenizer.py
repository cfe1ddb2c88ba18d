"""The byte-level BPE tokenizer of the tiny Qwen3 checkpoints.

All 256 bytes are in the base alphabet (any text round-trips), merges are learned from a
small built-in corpus and padded with synthetic merges up to the preset's size, so that
every id decodes, to whole characters where it is not a lone byte. Deterministic;
`tokenizers` is imported inside the functions.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from app.tiny_presets import ADDED_TOKENS, SPECIAL_TOKENS, ModelPreset, get_preset
from app.token_bytes import bytes_to_unicode, unicode_to_byte

if TYPE_CHECKING:
    from tokenizers import Tokenizer

_CORPUS: Final[str] = """\
Hello! How can I help you today? I am a helpful assistant. You can ask me anything.
User: Hi, can you help me write a short email to my team about the meeting tomorrow?
Assistant: Of course! Here is a draft: "Hi team, just a reminder that our meeting is
tomorrow at 10 am in the main room. Please bring your notes and questions. Thanks!"
User: Thank you, that is great. Can you make it a little more friendly?
Assistant: Sure. "Hello everyone! A quick reminder that we will meet tomorrow morning at
10 am. Looking forward to seeing you all there, and feel free to bring coffee!"
The assistant answers questions, explains ideas step by step, and writes code. When the
user asks a question, the assistant thinks about the problem first and then gives a clear
and helpful answer. If the assistant does not know something, it says so honestly.
A chat is a conversation between a user and an assistant. Each message has a role and
some content. The system message tells the assistant how to behave. The user message
asks for something, and the assistant message is the reply. Tools can be called to get
the weather, search the web, or run a calculation, and the tool returns a response.
Let me think about this step by step. First, we read the question carefully. Second, we
find the important numbers. Third, we compute the answer and check it again.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 32 42 64 100 128 256
512 1000 1024 2048 4096 8192 10000 65536 1000000 3.14159 2.71828 0.5 0.25 -1 -42 1e-6.
What is 12 plus 30? The answer is 42. What is 7 times 8? The answer is 56. What is 100
divided by 4? The answer is 25. Two plus two is four. Ten minus three is seven.
The first one, the second one, the third one, and the last one. One, two, three, four,
five, six, seven, eight, nine, ten, eleven, twelve, twenty, thirty, hundred, thousand.
The weather today is sunny with a high of 25 degrees. Tomorrow it will rain in the city.
Please tell me more about the history of the internet, the computer, and the phone.
Here is some Python code:
def add(a: int, b: int) -> int:
    \"\"\"Return the sum of two numbers.\"\"\"
    return a + b

def fibonacci(n: int) -> list[int]:
    result = [0, 1]
    for i in range(2, n):
        result.append(result[i - 1] + result[i - 2])
    return result[:n]

class Assistant:
    def __init__(self, name: str) -> None:
        self.name = name

    def reply(self, message: str) -> str:
        if not message:
            return "Please say something."
        return f"Hello, {message}! My name is {self.name}."

import json
data = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
print(json.dumps(data, indent=2))
for item in items:
    if item is None:
        continue
    print(item)
function greet(name) {
  const message = `Hello, ${name}!`;
  console.log(message);
  return message;
}
SELECT id, name, count(*) FROM users WHERE age > 18 GROUP BY name ORDER BY id;
{"role": "user", "content": "What is the weather in Paris?"}
{"role": "assistant", "content": null, "tool_calls": [{"type": "function"}]}
{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
"properties": {"city": {"type": "string", "description": "The city name"}}}}}
The quick brown fox jumps over the lazy dog. The model generates one token at a time.
A large language model is trained on a lot of text, and it learns to predict the next
word. The server receives a request, sends it to the engine, and streams the response
back to the client. The response has a status code, headers, and a body.
你好！我是一个人工智能助手，很高兴为你服务。请问有什么可以帮你的吗？
用户：你好，请帮我写一段关于天气的介绍。
助手：好的。今天的天气很好，阳光明媚，气温二十五度，适合出去散步。明天可能会下雨，
请记得带伞。如果你还有其他问题，请随时告诉我。
用户：谢谢你！你能用中文解释一下什么是大语言模型吗？
助手：当然可以。大语言模型是一种人工智能模型，它通过学习大量的文本数据来理解和生成
语言。它可以回答问题、写文章、翻译语言、写代码，还可以和用户进行对话。
我们先想一想这个问题。第一步，读懂问题；第二步，找到重要的数字；第三步，计算答案并检查。
一、二、三、四、五、六、七、八、九、十、百、千、万。十二加三十等于四十二。
今天我们一起学习编程。这是一个简单的函数，它可以计算两个数字的和。
请问北京今天的天气怎么样？我想知道明天会不会下雨。谢谢！
助手会认真思考用户的问题，然后给出清楚、有帮助的回答。如果不知道答案，助手会诚实地说明。
对话由很多条消息组成，每条消息都有角色和内容。系统消息告诉助手应该怎样回答。
Emoji are fun too: 😀 😂 👍 🎉 ❤️ 🚀 ✅ — and some symbols: © ® ™ € £ ¥ ° ± × ÷ → ← ≤ ≥.
Bonjour, comment ça va ? Très bien, merci. Guten Tag! ¿Cómo estás? Привет, как дела?
"""
"""Built-in training text for the learned merges (English, Chinese, numbers, code)."""


def _learn_merges(
    words: Iterable[str], vocab: dict[str, int], target: int
) -> list[tuple[str, str]]:
    """Classic BPE training with deterministic tie-breaking; grows `vocab` in place.

    Stops when `vocab` has `target` tokens or no pair occurs at least twice.
    """
    counts: dict[str, int] = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    ordered = sorted(counts)
    symbols: list[list[str]] = [list(word) for word in ordered]
    freq: list[int] = [counts[word] for word in ordered]

    pair_counts: dict[tuple[str, str], int] = {}
    where: dict[tuple[str, str], set[int]] = {}

    def account(index: int, sign: int) -> None:
        word = symbols[index]
        for pair in itertools.pairwise(word):
            pair_counts[pair] = pair_counts.get(pair, 0) + sign * freq[index]
            if sign > 0:
                where.setdefault(pair, set()).add(index)

    for index in range(len(symbols)):
        account(index, +1)

    merges: list[tuple[str, str]] = []
    while len(vocab) < target:
        best: tuple[str, str] | None = None
        best_count = 1
        for pair, count in pair_counts.items():
            if count > best_count or (count == best_count and best is not None and pair < best):
                best, best_count = pair, count
        if best is None:
            break
        merged = best[0] + best[1]
        merges.append(best)
        if merged not in vocab:
            vocab[merged] = len(vocab)
        for index in sorted(where.pop(best, ())):
            pieces = symbols[index]
            if len(pieces) < 2:
                continue
            account(index, -1)
            out: list[str] = []
            i = 0
            while i < len(pieces):
                if i + 1 < len(pieces) and pieces[i] == best[0] and pieces[i + 1] == best[1]:
                    out.append(merged)
                    i += 2
                else:
                    out.append(pieces[i])
                    i += 1
            symbols[index] = out
            account(index, +1)
        pair_counts = {pair: count for pair, count in pair_counts.items() if count > 0}
    return merges


def _synthetic_merges(
    vocab: dict[str, int], alphabet: list[str], target: int
) -> list[tuple[str, str]]:
    """Pad `vocab` to `target` tokens: each new token joins an existing token that decodes
    to whole characters and a printable ASCII character.

    So every padded id decodes to whole characters, as nearly all ids of a real Qwen
    vocabulary do (1,448 of Qwen's 151,643 byte-level BPE tokens, 0.95%, end inside a
    UTF-8 character). Random weights pick ids about uniformly, and a split character is
    held back by the detokenizer until the next token; joining arbitrary bytes instead
    made 61% of the qwen3-0.6b preset's ids split, which no real output resembles.
    """
    byte_of = unicode_to_byte()
    ascii_right = [alphabet[b] for b in range(0x21, 0x7F)]  # printable, not the space

    def whole(token: str) -> bool:
        try:
            bytes(byte_of[char] for char in token).decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    merges: list[tuple[str, str]] = []
    lefts = [token for token in vocab if whole(token)]  # id order; grows as tokens are added
    left_index = 0
    while len(vocab) < target:
        left = lefts[left_index]
        left_index += 1
        for right in ascii_right:
            if len(vocab) >= target:
                break
            merged = left + right
            if merged in vocab:
                continue
            vocab[merged] = len(vocab)
            lefts.append(merged)
            merges.append((left, right))
    return merges


def build_tokenizer(preset: str | ModelPreset = "tiny") -> Tokenizer:
    """The byte-level BPE `tokenizers.Tokenizer` of a preset, with the added tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import BPE

    spec = get_preset(preset)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    alphabet = [bytes_to_unicode()[b] for b in range(256)]
    vocab: dict[str, int] = {char: index for index, char in enumerate(alphabet)}
    words = [piece for piece, _ in byte_level.pre_tokenize_str(_CORPUS)]
    merges = _learn_merges(words, vocab, spec.bpe_vocab_size)
    merges += _synthetic_merges(vocab, alphabet, spec.bpe_vocab_size)

    tokenizer = Tokenizer(BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tokenizer.pre_tokenizer = byte_level
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    for token in ADDED_TOKENS:
        special = token in SPECIAL_TOKENS
        added = AddedToken(token, special=special, normalized=False)
        if special:
            tokenizer.add_special_tokens([added])
        else:
            tokenizer.add_tokens([added])
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    if size != spec.tokenizer_size:  # pragma: no cover - guards the construction above
        raise RuntimeError(f"tokenizer has {size} tokens, expected {spec.tokenizer_size}")
    return tokenizer
