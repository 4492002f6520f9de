"""Model providers: the scripted model's determinism, and OpenAIChat against a fake server."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from duraguard._wire import Message, ModelRequest, ModelResponse, ToolCall
from duraguard.errors import ConfigurationError
from duraguard.models import (
    MODEL_REQUEST_REFUSED,
    MODEL_UNAVAILABLE,
    OpenAIChat,
    ScriptedModel,
    ScriptedModels,
    ScriptedTurn,
    answer,
    calls,
    last_tool_results,
    split_model,
)
from duraguard.tools import Tool, tool

from ._http import serve_json

KEY_ENV = "DURAGUARD_TEST_OPENAI_KEY"
SECRET = "sk-test-do-not-leak-0123456789"


@tool(kind="read")
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id."""
    return {"order_id": order_id}


def request(
    *messages: Message, model: str = "scripted:demo", tools: tuple[str, ...] = ()
) -> ModelRequest:
    return ModelRequest(model=model, messages=messages, tools=tools)


USER = Message(role="user", content="Refund order A1")


def assistant_called(*tool_calls: ToolCall) -> Message:
    return Message(role="assistant", tool_calls=tool_calls)


# --- ScriptedModel ----------------------------------------------------------------------------


async def test_scripted_model_plays_turns_by_counting_assistant_messages() -> None:
    model = ScriptedModel(
        [
            calls(("lookup_order", {"order_id": "A1"}), ("lookup_order", {"order_id": "A2"})),
            answer("done"),
        ]
    )
    first = await model.complete(request(USER), [])
    assert first == ModelResponse(
        tool_calls=(
            ToolCall(id="call-0-0", name="lookup_order", arguments={"order_id": "A1"}),
            ToolCall(id="call-0-1", name="lookup_order", arguments={"order_id": "A2"}),
        )
    )
    after = request(
        USER,
        assistant_called(*first.tool_calls),
        Message(role="tool", tool_call_id="call-0-0", content="{}"),
        Message(role="tool", tool_call_id="call-0-1", content="{}"),
    )
    assert await model.complete(after, []) == ModelResponse(content="done")


async def test_scripted_model_gives_the_same_response_to_a_retried_request() -> None:
    model = ScriptedModel([calls(("lookup_order", {"order_id": "A1"})), answer("done")])
    req = request(USER)
    assert await model.complete(req, []) == await model.complete(req, [])


async def test_scripted_model_answers_final_text_past_the_end_of_the_script() -> None:
    model = ScriptedModel([answer("only turn")], final="no more")
    past_end = request(USER, Message(role="assistant", content="only turn"), USER)
    assert await model.complete(past_end, []) == ModelResponse(content="no more")
    assert (await ScriptedModel([]).complete(request(USER), [])).content == "(end of script)"


async def test_scripted_turn_function_reacts_to_the_refusal_the_model_read() -> None:
    def second(req: ModelRequest) -> ScriptedTurn:
        results = last_tool_results(req)
        if results and "refused" in (results[0].content or ""):
            return answer("I could not refund: a guardrail refused it.")
        return answer("Refunded.")

    model = ScriptedModel([calls(("refund_card", {"order_id": "A1", "amount": 900})), second])
    call = ToolCall(id="call-0-0", name="refund_card", arguments={"order_id": "A1", "amount": 900})
    refusal = Message(role="tool", tool_call_id="call-0-0", content="refused: amount too high")
    response = await model.complete(request(USER, assistant_called(call), refusal), [])
    assert response.content == "I could not refund: a guardrail refused it."


async def test_scripted_model_passes_malformed_arguments_through_unchanged() -> None:
    model = ScriptedModel([calls(("lookup_order", '{"order_id": "A1"'))])
    response = await model.complete(request(USER), [])
    assert response.tool_calls[0].arguments == '{"order_id": "A1"'


def test_calls_rejects_a_bare_name_and_says_how_to_write_it() -> None:
    with pytest.raises(ConfigurationError, match=r"calls\(\(\"lookup_order\""):
        calls("lookup_order")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="at least one"):
        calls()


async def test_scripted_models_select_the_script_named_after_the_colon() -> None:
    models = ScriptedModels({"refund-demo": [answer("refund script")], "other": [answer("other")]})
    response = await models.complete(request(USER, model="scripted:refund-demo"), [])
    assert response.content == "refund script"
    assert split_model("scripted:refund-demo") == ("scripted", "refund-demo")
    assert split_model("ollama:llama3:8b") == ("ollama", "llama3:8b")


async def test_scripted_models_refuse_an_unknown_script_without_retry_naming_the_known() -> None:
    models = ScriptedModels({"refund-demo": [answer("x")]})
    with pytest.raises(ApplicationError) as raised:
        await models.complete(request(USER, model="scripted:nope"), [])
    assert raised.value.non_retryable
    assert raised.value.type == MODEL_REQUEST_REFUSED
    assert "'nope'" in raised.value.message and "known: refund-demo" in raised.value.message


# --- a fake OpenAI-compatible server -----------------------------------------------------------


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeOpenAI:
    """Serves queued replies to POST /v1/chat/completions and records what it was sent."""

    base_url: str = ""
    replies: list[Reply] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    def reply(self, status: int, body: Any, **headers: str) -> None:
        self.replies.append(Reply(status, body, headers))


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()

    def answer(request: Any, body: Any) -> tuple[int, Any, dict[str, str]]:
        fake.received.append(body)
        fake.auth.append(request.headers.get("Authorization"))
        fake.paths.append(request.path)
        reply = fake.replies.pop(0) if fake.replies else Reply(500, {"error": "no reply"})
        return reply.status, reply.body, reply.headers

    with serve_json(answer) as url:
        fake.base_url = f"{url}/v1"
        yield fake


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def completion(message: dict[str, Any], **usage: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}
        ],
        "usage": usage,
    }


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def openai(fake: FakeOpenAI) -> OpenAIChat:
    return OpenAIChat(base_url=fake.base_url, api_key_env=KEY_ENV, timeout=10)


TOOLS: list[Tool] = [lookup_order]


async def test_openai_tool_calling_round_trip(fake_openai: FakeOpenAI, api_key: str) -> None:
    model = openai(fake_openai)
    fake_openai.reply(
        200,
        completion(
            {
                "content": None,
                "tool_calls": [tool_call("call_abc", "lookup_order", '{"order_id":"A1"}')],
            },
            prompt_tokens=12,
            completion_tokens=5,
            total_tokens=17,
        ),
    )
    first_request = request(USER, model="openai:gpt-4.1", tools=("lookup_order",))
    first = await model.complete(first_request, TOOLS)
    assert first == ModelResponse(
        tool_calls=(ToolCall(id="call_abc", name="lookup_order", arguments={"order_id": "A1"}),),
        usage={"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    )
    sent = fake_openai.received[0]
    assert fake_openai.paths == ["/v1/chat/completions"]
    assert fake_openai.auth == [f"Bearer {api_key}"]
    assert sent["model"] == "gpt-4.1"
    assert sent["messages"] == [{"role": "user", "content": "Refund order A1"}]
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "description": "Look an order up by its id.",
                "parameters": lookup_order.input_schema,
            },
        }
    ]

    fake_openai.reply(200, completion({"content": "Order A1 is paid."}))
    second_request = request(
        USER,
        assistant_called(*first.tool_calls),
        Message(
            role="tool", tool_call_id="call_abc", name="lookup_order", content='{"amount": 20.0}'
        ),
        model="openai:gpt-4.1",
        tools=("lookup_order",),
    )
    second = await model.complete(second_request, TOOLS)
    assert second.content == "Order A1 is paid." and second.tool_calls == ()
    assert fake_openai.received[1]["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [tool_call("call_abc", "lookup_order", '{"order_id": "A1"}')],
        },
        {"role": "tool", "tool_call_id": "call_abc", "content": '{"amount": 20.0}'},
    ]


async def test_openai_malformed_arguments_come_back_as_the_raw_string(
    fake_openai: FakeOpenAI, api_key: str
) -> None:
    fake_openai.reply(
        200,
        completion(
            {
                "content": None,
                "tool_calls": [
                    tool_call("c1", "lookup_order", '{"order_id": "A1"'),
                    tool_call("c2", "lookup_order", ""),
                ],
            }
        ),
    )
    response = await openai(fake_openai).complete(request(USER, model="openai:gpt-4.1"), TOOLS)
    assert [c.arguments for c in response.tool_calls] == ['{"order_id": "A1"', {}]


async def test_openai_sends_a_malformed_call_back_as_the_model_wrote_it(
    fake_openai: FakeOpenAI, api_key: str
) -> None:
    fake_openai.reply(200, completion({"content": "ok"}))
    bad = ToolCall(id="c1", name="lookup_order", arguments='{"order_id": "A1"')
    await openai(fake_openai).complete(
        request(USER, assistant_called(bad), model="openai:gpt-4.1"), TOOLS
    )
    sent_call = fake_openai.received[0]["messages"][1]["tool_calls"][0]
    assert sent_call["function"]["arguments"] == '{"order_id": "A1"'


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_openai_transient_status_raises_a_retryable_error(
    fake_openai: FakeOpenAI, api_key: str, status: int
) -> None:
    fake_openai.reply(status, {"error": {"message": "slow down"}}, Retry_After="2")
    with pytest.raises(ApplicationError) as raised:
        await openai(fake_openai).complete(request(USER, model="openai:gpt-4.1"), TOOLS)
    assert not raised.value.non_retryable
    assert raised.value.type == MODEL_UNAVAILABLE
    assert raised.value.next_retry_delay == timedelta(seconds=2)
    assert f"HTTP {status}" in raised.value.message and "slow down" in raised.value.message


async def test_openai_bad_request_raises_non_retryable_with_the_providers_reason(
    fake_openai: FakeOpenAI, api_key: str
) -> None:
    fake_openai.reply(400, {"error": {"message": "Invalid schema for function 'lookup_order'"}})
    with pytest.raises(ApplicationError) as raised:
        await openai(fake_openai).complete(request(USER, model="openai:gpt-4.1"), TOOLS)
    assert raised.value.non_retryable
    assert raised.value.type == MODEL_REQUEST_REFUSED
    assert "HTTP 400" in raised.value.message
    assert "Invalid schema for function 'lookup_order'" in raised.value.message


async def test_openai_never_puts_the_key_in_an_error(fake_openai: FakeOpenAI, api_key: str) -> None:
    fake_openai.reply(401, {"error": {"message": f"Incorrect API key provided: {api_key}"}})
    with pytest.raises(ApplicationError) as raised:
        await openai(fake_openai).complete(request(USER, model="openai:gpt-4.1"), TOOLS)
    assert raised.value.non_retryable
    assert api_key not in str(raised.value) and api_key not in repr(openai(fake_openai))
    assert f"${KEY_ENV}" in raised.value.message


async def test_openai_missing_key_env_var_says_which_variable_to_set(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ApplicationError) as raised:
        await openai(fake_openai).complete(request(USER, model="openai:gpt-4.1"), TOOLS)
    assert raised.value.non_retryable
    assert f"export {KEY_ENV}=" in raised.value.message
    assert fake_openai.received == []


async def test_openai_without_a_key_env_sends_no_authorization(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(200, completion({"content": "hi"}))
    model = OpenAIChat(base_url=fake_openai.base_url, api_key_env=None, model="local-model")
    response = await model.complete(request(USER, model="local"), [])
    assert response.content == "hi"
    assert fake_openai.auth == [None]
    assert fake_openai.received[0]["model"] == "local-model"
    assert "tools" not in fake_openai.received[0]


async def test_openai_reply_that_is_not_json_is_refused_pointing_at_base_url(
    fake_openai: FakeOpenAI, api_key: str
) -> None:
    fake_openai.reply(200, b"<html>welcome</html>")
    with pytest.raises(ApplicationError) as raised:
        await openai(fake_openai).complete(request(USER, model="openai:gpt-4.1"), TOOLS)
    assert raised.value.non_retryable and "base_url" in raised.value.message


async def test_openai_connection_refused_is_retryable(api_key: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = OpenAIChat(base_url=f"http://127.0.0.1:{port}/v1", api_key_env=KEY_ENV, timeout=5)
    with pytest.raises(ApplicationError) as raised:
        await model.complete(request(USER, model="openai:gpt-4.1"), TOOLS)
    assert not raised.value.non_retryable
    assert raised.value.type == MODEL_UNAVAILABLE


def test_openai_settings_are_checked_when_built() -> None:
    with pytest.raises(ConfigurationError, match="http:// or https://"):
        OpenAIChat(base_url="api.openai.com/v1")
    with pytest.raises(ConfigurationError, match="timeout"):
        OpenAIChat(timeout=0)


def test_openai_base_url_defaults_to_the_environment_as_the_openai_sdk_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIChat().base_url == "https://api.openai.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    assert OpenAIChat().base_url == "http://127.0.0.1:9/v1"
    assert OpenAIChat(base_url="https://other.example/v1").base_url == "https://other.example/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "api.openai.com/v1")
    with pytest.raises(ConfigurationError, match="must start with http"):
        OpenAIChat()
