"""Write small, randomly initialised Qwen3 checkpoints for tests and benchmarks.

`write_tiny_model(directory, preset)` produces a complete Hugging Face model directory
(`config.json`, `generation_config.json`, `model.safetensors`, `tokenizer.json`,
`tokenizer_config.json`) for `Qwen3ForCausalLM` that both `transformers` and vLLM load:

* ``"tiny"``: 2 layers, hidden size 128, a ~1k-token byte-level BPE tokenizer. Loads in
  vLLM on a laptop CPU in seconds; outputs are gibberish but every id decodes.
* ``"qwen3-0.6b"``: Qwen3-0.6B's exact architecture (28 layers, hidden 1024, vocab 151936)
  with random weights, for throughput measurements without downloading real weights.
  Its tokenizer is padded with synthetic merges so that every id < 151936 decodes.

The tokenizer is a byte-level BPE (all 256 bytes in the base alphabet, so any text
round-trips) with Qwen3's special tokens and a Qwen3-compatible ChatML chat template
(tools, tool calls, tool responses, reasoning content, ``enable_thinking``).

Everything is deterministic: the same preset and seed give byte-identical files.
Heavy libraries (torch, transformers, tokenizers) are imported inside the functions.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "ADDED_TOKENS",
    "CHAT_TEMPLATE",
    "PRESETS",
    "SPECIAL_TOKENS",
    "ModelPreset",
    "build_tokenizer",
    "write_tiny_model",
]


@dataclass(frozen=True)
class ModelPreset:
    """Architecture and tokenizer size of one preset."""

    name: str
    num_hidden_layers: int
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    tokenizer_size: int
    """Total tokenizer size: BPE vocabulary plus the added tokens."""
    max_position_embeddings: int = 4096
    rope_theta: float = 1_000_000.0
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = True
    dtype: str = "bfloat16"
    init_std: float = 0.02

    @property
    def vocab_size(self) -> int:
        """Embedding rows: the tokenizer size rounded up to a multiple of 64."""
        return math.ceil(self.tokenizer_size / 64) * 64

    @property
    def bpe_vocab_size(self) -> int:
        """Tokens of the BPE model itself (without the added tokens)."""
        return self.tokenizer_size - len(ADDED_TOKENS)


SPECIAL_TOKENS: Final[tuple[str, ...]] = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Added with ``special=True``: dropped by ``skip_special_tokens=True`` decoding."""

NON_SPECIAL_ADDED_TOKENS: Final[tuple[str, ...]] = (
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
)
"""Added with ``special=False`` (as in Qwen3): single ids that survive skip_special_tokens."""

ADDED_TOKENS: Final[tuple[str, ...]] = SPECIAL_TOKENS + NON_SPECIAL_ADDED_TOKENS
"""All added tokens, in id order, right after the BPE vocabulary."""

EOS_TOKEN: Final = "<|im_end|>"
PAD_TOKEN: Final = "<|endoftext|>"

PRESETS: Final[dict[str, ModelPreset]] = {
    "tiny": ModelPreset(
        name="tiny",
        num_hidden_layers=2,
        hidden_size=128,
        intermediate_size=256,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,  # vLLM's CPU attention kernel rejects head_dim 16
        tokenizer_size=1024,
        max_position_embeddings=4096,
    ),
    "qwen3-0.6b": ModelPreset(
        name="qwen3-0.6b",
        num_hidden_layers=28,
        hidden_size=1024,
        intermediate_size=3072,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        tokenizer_size=151936,
        max_position_embeddings=40960,
    ),
}

# --------------------------------------------------------------------------------------
# Chat template
# --------------------------------------------------------------------------------------

CHAT_TEMPLATE: Final[str] = (
    # Text of a message content: a string, or a list of parts whose texts are joined with
    # newlines (as vLLM does when it flattens parts itself); other parts are ignored.
    "{%- macro render_content(content) -%}\n"
    "    {%- if content is none or content is undefined -%}\n"
    "    {%- elif content is string -%}\n"
    "        {{- content -}}\n"
    "    {%- elif content is mapping -%}\n"
    "        {{- content.text if content.text is string else '' -}}\n"
    "    {%- else -%}\n"
    "        {%- set parts = namespace(texts=[]) -%}\n"
    "        {%- for part in content -%}\n"
    "            {%- if part is string -%}\n"
    "                {%- set parts.texts = parts.texts + [part] -%}\n"
    "            {%- elif part is mapping and part.text is string"
    " and (part.type is undefined or part.type == 'text') -%}\n"
    "                {%- set parts.texts = parts.texts + [part.text] -%}\n"
    "            {%- endif -%}\n"
    "        {%- endfor -%}\n"
    "        {{- parts.texts | join('\\n') -}}\n"
    "    {%- endif -%}\n"
    "{%- endmacro -%}\n"
    # System turn, with the tool signatures merged after the system content.
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages and messages[0].role == 'system' %}\n"
    "        {{- render_content(messages[0].content) + '\\n\\n' }}\n"
    "    {%- endif %}\n"
    '    {{- "# Tools\\n\\nYou may call one or more functions to assist with the user query.'
    "\\n\\nYou are provided with function signatures within <tools></tools> XML tags:"
    '\\n<tools>" }}\n'
    "    {%- for tool in tools %}\n"
    "        {{- '\\n' }}\n"
    "        {{- tool | tojson }}\n"
    "    {%- endfor %}\n"
    '    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function'
    " name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n"
    '{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call>'
    '<|im_end|>\\n" }}\n'
    "{%- elif messages and messages[0].role == 'system' %}\n"
    "    {{- '<|im_start|>system\\n' + render_content(messages[0].content)"
    " + '<|im_end|>\\n' }}\n"
    "{%- endif %}\n"
    # Index of the last real user query (tool responses wrapped in user turns don't count).
    "{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}\n"
    "{%- for message in messages[::-1] %}\n"
    "    {%- set index = (messages|length - 1) - loop.index0 %}\n"
    "    {%- if ns.multi_step_tool and message.role == 'user' %}\n"
    "        {%- set query = render_content(message.content) %}\n"
    "        {%- if not (query.startswith('<tool_response>')"
    " and query.endswith('</tool_response>')) %}\n"
    "            {%- set ns.multi_step_tool = false %}\n"
    "            {%- set ns.last_query_index = index %}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- for message in messages %}\n"
    "    {%- set content = render_content(message.content) %}\n"
    "    {%- if message.role == 'system' and loop.first %}\n"
    "    {%- elif message.role == 'assistant' %}\n"
    "        {%- set reasoning_content = '' %}\n"
    "        {%- if message.reasoning_content is string %}\n"
    "            {%- set reasoning_content = message.reasoning_content %}\n"
    "        {%- elif message.reasoning is string %}\n"
    "            {%- set reasoning_content = message.reasoning %}\n"
    "        {%- elif '</think>' in content %}\n"
    "            {%- set reasoning_content = content.split('</think>')[0].rstrip('\\n')"
    ".split('<think>')[-1].lstrip('\\n') %}\n"
    "            {%- set content = content.split('</think>')[-1].lstrip('\\n') %}\n"
    "        {%- endif %}\n"
    "        {%- if loop.index0 > ns.last_query_index and (loop.last or reasoning_content) %}\n"
    "            {{- '<|im_start|>assistant\\n<think>\\n' + reasoning_content.strip('\\n')"
    " + '\\n</think>\\n\\n' + content.lstrip('\\n') }}\n"
    "        {%- else %}\n"
    "            {{- '<|im_start|>assistant\\n' + content }}\n"
    "        {%- endif %}\n"
    "        {%- if message.tool_calls %}\n"
    "            {%- for tool_call in message.tool_calls %}\n"
    "                {%- if not loop.first or content %}\n"
    "                    {{- '\\n' }}\n"
    "                {%- endif %}\n"
    "                {%- if tool_call.function %}\n"
    "                    {%- set tool_call = tool_call.function %}\n"
    "                {%- endif %}\n"
    '                {{- \'<tool_call>\\n{"name": "\' + tool_call.name'
    ' + \'", "arguments": \' }}\n'
    "                {%- if tool_call.arguments is string %}\n"
    "                    {{- tool_call.arguments }}\n"
    "                {%- elif tool_call.arguments is defined and tool_call.arguments"
    " is not none %}\n"
    "                    {{- tool_call.arguments | tojson }}\n"
    "                {%- else %}\n"
    "                    {{- '{}' }}\n"
    "                {%- endif %}\n"
    "                {{- '}\\n</tool_call>' }}\n"
    "            {%- endfor %}\n"
    "        {%- endif %}\n"
    "        {{- '<|im_end|>\\n' }}\n"
    "    {%- elif message.role == 'tool' %}\n"
    "        {%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}\n"
    "            {{- '<|im_start|>user' }}\n"
    "        {%- endif %}\n"
    "        {{- '\\n<tool_response>\\n' + content + '\\n</tool_response>' }}\n"
    "        {%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}\n"
    "            {{- '<|im_end|>\\n' }}\n"
    "        {%- endif %}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "    {%- if enable_thinking is defined and enable_thinking is false %}\n"
    "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
)
"""Qwen3-compatible ChatML template (same rendering as Qwen3's for the supported cases)."""

# --------------------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------------------

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


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map, the alphabet of the ByteLevel pre-tokenizer."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


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
    """Pad `vocab` to `target` tokens: each new token joins an existing token and a byte."""
    merges: list[tuple[str, str]] = []
    tokens = list(vocab)  # id order; grows as tokens are added
    left_index = 0
    while len(vocab) < target:
        left = tokens[left_index]
        left_index += 1
        for right in alphabet:
            if len(vocab) >= target:
                break
            merged = left + right
            if merged in vocab:
                continue
            vocab[merged] = len(vocab)
            tokens.append(merged)
            merges.append((left, right))
    return merges


def build_tokenizer(preset: str | ModelPreset = "tiny") -> Tokenizer:
    """The byte-level BPE `tokenizers.Tokenizer` of a preset, with the added tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import BPE

    spec = _preset(preset)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    alphabet = [_bytes_to_unicode()[b] for b in range(256)]
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


# --------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------


def _preset(preset: str | ModelPreset) -> ModelPreset:
    if isinstance(preset, ModelPreset):
        return preset
    try:
        return PRESETS[preset]
    except KeyError:
        raise ValueError(
            f"unknown preset {preset!r}; choose one of {', '.join(sorted(PRESETS))}"
        ) from None


def _write_tokenizer(tokenizer: Tokenizer, spec: ModelPreset, directory: Path) -> None:
    from transformers import PreTrainedTokenizerFast

    hf_tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        bos_token=None,
        unk_token=None,
        chat_template=CHAT_TEMPLATE,
        model_max_length=spec.max_position_embeddings,
        clean_up_tokenization_spaces=False,
        split_special_tokens=False,
    )
    # save_jinja_files=False keeps the chat template inside tokenizer_config.json.
    hf_tokenizer.save_pretrained(str(directory), save_jinja_files=False)
    config_path = directory / "tokenizer_config.json"
    config: dict[str, Any] = json.loads(config_path.read_text(encoding="utf-8"))
    config.update(
        tokenizer_class="PreTrainedTokenizerFast",
        add_bos_token=False,
        add_eos_token=False,
        add_prefix_space=False,
        bos_token=None,
        unk_token=None,
        errors="replace",
        chat_template=CHAT_TEMPLATE,
        # Transformers 4 reads this key; v5 maps it to extra_special_tokens. (v5 writes
        # extra_special_tokens as a list, which v4 expects to be a dict, so drop that.)
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )
    config.pop("extra_special_tokens", None)
    config_path.write_text(
        json.dumps(config, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8"
    )


def _model_config(spec: ModelPreset, token_ids: dict[str, int]) -> Any:
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=spec.vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        hidden_act="silu",
        max_position_embeddings=spec.max_position_embeddings,
        initializer_range=spec.init_std,
        rms_norm_eps=spec.rms_norm_eps,
        use_cache=True,
        tie_word_embeddings=spec.tie_word_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": spec.rope_theta},
        attention_bias=False,
        attention_dropout=0.0,
        use_sliding_window=False,
        sliding_window=None,
        max_window_layers=spec.num_hidden_layers,
        bos_token_id=None,
        eos_token_id=token_ids[EOS_TOKEN],
        pad_token_id=token_ids[PAD_TOKEN],
        dtype=spec.dtype,
        architectures=["Qwen3ForCausalLM"],
    )


def _write_model(spec: ModelPreset, token_ids: dict[str, int], seed: int, directory: Path) -> None:
    import inspect

    import torch
    from transformers import Qwen3ForCausalLM

    config = _model_config(spec, token_ids)
    dtype = getattr(torch, spec.dtype)
    # Build on the meta device (no slow default init), then allocate and fill the
    # parameters from one seeded generator in a fixed order.
    with torch.device("meta"):
        model = Qwen3ForCausalLM(config)
    model = model.to(dtype=dtype).to_empty(device="cpu")
    if spec.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    generator = torch.Generator(device="cpu").manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.fill_(1.0)
            else:
                parameter.normal_(mean=0.0, std=spec.init_std, generator=generator)
        # Non-persistent rotary buffers were left uninitialised by to_empty().
        model.model.rotary_emb = type(model.model.rotary_emb)(config=config)
    model.eval()
    kwargs: dict[str, Any] = {}
    if "safe_serialization" in inspect.signature(model.save_pretrained).parameters:
        kwargs["safe_serialization"] = True  # transformers < 5; v5 always writes safetensors
    model.save_pretrained(str(directory), **kwargs)


def _finish_configs(spec: ModelPreset, token_ids: dict[str, int], directory: Path) -> None:
    """Add legacy keys to config.json and write a sampling-free generation_config.json."""
    import transformers

    config_path = directory / "config.json"
    config: dict[str, Any] = json.loads(config_path.read_text(encoding="utf-8"))
    # Keys that transformers < 5 (and the vLLM versions built on it) read.
    config["torch_dtype"] = spec.dtype
    config["dtype"] = spec.dtype
    config["rope_theta"] = spec.rope_theta
    config["rope_scaling"] = None
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    generation_config = {
        "bos_token_id": None,
        "eos_token_id": [token_ids[EOS_TOKEN], token_ids[PAD_TOKEN]],
        "pad_token_id": token_ids[PAD_TOKEN],
        "transformers_version": transformers.__version__,
    }
    (directory / "generation_config.json").write_text(
        json.dumps(generation_config, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


_WRITTEN_FILES: Final = frozenset(
    {
        "config.json",
        "generation_config.json",
        "model.safetensors.index.json",
        "tokenizer.json",
        "tokenizer_config.json",
    }
)


def write_tiny_model(directory: str | Path, preset: str = "tiny", seed: int = 0) -> Path:
    """Write a randomly initialised `Qwen3ForCausalLM` model directory and return its path.

    The directory (created if needed) holds config.json, generation_config.json,
    model.safetensors (bf16; byte-identical for the same preset and seed),
    tokenizer.json and tokenizer_config.json (with the chat template).
    """
    spec = _preset(preset)
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)

    tokenizer = build_tokenizer(spec)
    token_ids: dict[str, int] = {}
    for token in ADDED_TOKENS:
        token_id = tokenizer.token_to_id(token)
        if token_id is None:  # pragma: no cover - added just above
            raise RuntimeError(f"{token} is missing from the tokenizer")
        token_ids[token] = token_id
    _write_tokenizer(tokenizer, spec, path)
    _write_model(spec, token_ids, seed, path)
    _finish_configs(spec, token_ids, path)
    for file in path.iterdir():
        if file.is_file() and (file.name in _WRITTEN_FILES or file.suffix == ".safetensors"):
            file.chmod(0o644)  # save_pretrained writes the weights with mode 0600
    return path
