// Drives a live agui-inbox server with the official AG-UI client (@ag-ui/client HttpAgent).
//
// Every run goes through HttpAgent.runAgent, so the client's own event enforcement and
// verification (verifyEvents) judge every stream: a verification failure rejects runAgent and
// fails the scenario. Every HTTP response body is captured as it came off the wire, one file per
// stream (streams/NNN-scenario.sse), and every event as a line of events.jsonl, for
// ag-ui-validate and the ag_ui.core round trip in tests/integration/test_agui_client.py.
//
// Environment:
//   AGUI_BASE_URL  http://host:port of the server (required)
//   AGUI_TOKEN     an API token of the demo user alice (required)
//   AGUI_OUT_DIR   where streams/ and events.jsonl go (default $TMPDIR/agui-client-out)
//   AGUI_CONTROL   "1": the test process answers control requests (expire an interrupt, release
//                  the gated model reply, wait for an abandoned run's stop) — a line "@@control {json}" on stdout, one JSON line
//                  back on stdin. Without it the scenarios that need one are reported skipped.
// Output: progress on stderr; the JSON summary as the last line of stdout. Exit 1 on any failure.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";

import { HttpAgent, randomUUID } from "@ag-ui/client";

const BASE = (process.env.AGUI_BASE_URL || "").replace(/\/$/, "");
const TOKEN = process.env.AGUI_TOKEN || "";
const OUT = process.env.AGUI_OUT_DIR || path.join(os.tmpdir(), "agui-client-out");
const CONTROL = process.env.AGUI_CONTROL === "1";
const AGENT_URL = `${BASE}/agui/banking/`;
const TRANSFER = "Transfer $500 from account 1234567890 to account 0987654321";
const CONFETTI_TOOL = {
  name: "show_confetti",
  description: "Celebrate in the user's browser with a burst of confetti",
  parameters: { type: "object", properties: { colour: { type: "string" } } },
};

const log = (line) => process.stderr.write(`${line}\n`); // progress; console.* is the client's

if (!BASE || !TOKEN) {
  log("AGUI_BASE_URL and AGUI_TOKEN are required");
  process.exit(2);
}

// ------------------------------------------------------------------ capture

const streams = []; // one per HTTP response: {index, scenario, status, contentType, body, aborted}
const captures = [];
const warnings = []; // everything the client logs through console.warn / console.error
let scenario = "";

for (const level of ["warn", "error"]) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    const text = args.map((a) => (a instanceof Error ? a.message : String(a))).join(" ");
    warnings.push({ scenario, level, text: text.slice(0, 600) });
    original(...args);
  };
}

function recordingFetch(url, init) {
  return fetch(url, init).then((res) => {
    const entry = {
      index: streams.length, scenario, status: res.status,
      contentType: res.headers.get("content-type") || "", body: "", aborted: false,
    };
    streams.push(entry);
    captures.push(res.clone().text().then(
      (text) => { entry.body = text; },
      (err) => { entry.aborted = true; entry.error = String(err); },
    ));
    return res;
  });
}

function newAgent(threadId, { token = TOKEN } = {}) {
  return new HttpAgent({
    url: AGENT_URL,
    threadId: threadId ?? `thread-${randomUUID()}`,
    headers: token ? { Authorization: `Bearer ${token}` } : {},
    fetch: recordingFetch,
  });
}

// ------------------------------------------------------------------ control channel

let stdin = null;
let stdinLines = null;
async function control(request) {
  if (!CONTROL) return null;
  if (!stdinLines) {
    stdin = readline.createInterface({ input: process.stdin });
    stdinLines = stdin[Symbol.asyncIterator]();
  }
  process.stdout.write(`@@control ${JSON.stringify(request)}\n`);
  const { value, done } = await stdinLines.next();
  if (done) throw new Error("the test process closed the control channel");
  const answer = JSON.parse(value);
  if (!answer.ok) throw new Error(`control ${request.action} failed: ${answer.error}`);
  return answer;
}

// ------------------------------------------------------------------ helpers

class Skip extends Error {}

function expect(cond, message, detail) {
  if (!cond) {
    const suffix = detail === undefined ? "" : `: ${JSON.stringify(detail).slice(0, 800)}`;
    throw new Error(message + suffix);
  }
}

const types = (events) => events.map((e) => e.type);
const ofType = (events, type) => events.filter((e) => e.type === type);
const userMessage = (content) => ({ id: `msg-${randomUUID()}`, role: "user", content });

/** One runAgent call; resolves to {runId, events, error?} — never throws. */
async function run(agent, params = {}, hooks = {}) {
  const runId = params.runId || `run-${randomUUID()}`;
  const events = [];
  const subscriber = {
    onEvent: ({ event }) => { events.push(event); return hooks.onEvent?.(event); },
  };
  try {
    await agent.runAgent({ ...params, runId }, subscriber);
    return { runId, events };
  } catch (error) {
    return { runId, events, error };
  }
}

function finished(result, outcomeType = "success") {
  expect(!result.error, `runAgent failed (verification or transport): ${result.error?.message}`);
  const t = types(result.events);
  expect(t[0] === "RUN_STARTED", "the first event is RUN_STARTED", t);
  expect(result.events[0].runId === result.runId && result.events[0].protocolVersion === "1.0",
    "RUN_STARTED carries the client's runId and protocolVersion 1.0", result.events[0]);
  expect(t.at(-1) === "RUN_FINISHED", "the last event is RUN_FINISHED", t);
  expect(t.indexOf("STATE_SNAPSHOT") > 0, "a STATE_SNAPSHOT follows RUN_STARTED", t);
  const outcome = result.events.at(-1).outcome ?? { type: "success" };
  expect(outcome.type === outcomeType, `outcome ${outcomeType}`, outcome);
  return outcome;
}

/** A refused run: RUN_STARTED (the client's runId), then RUN_ERROR with `code`. */
function runError(result, code) {
  expect(!result.error, `runAgent failed (verification or transport): ${result.error?.message}`);
  const t = types(result.events);
  expect(t.length === 2 && t[0] === "RUN_STARTED" && t[1] === "RUN_ERROR", "RUN_STARTED, RUN_ERROR", t);
  expect(result.events[0].runId === result.runId, "RUN_STARTED carries the client's runId", result.events[0]);
  expect(result.events[1].code === code, `RUN_ERROR code ${code}`, result.events[1]);
  return result.events[1];
}

function toolResult(result, toolCallId) {
  const found = ofType(result.events, "TOOL_CALL_RESULT").filter((e) => !toolCallId || e.toolCallId === toolCallId);
  expect(found.length === 1, `one TOOL_CALL_RESULT for ${toolCallId}`, types(result.events));
  return found[0];
}

function text(result) {
  return ofType(result.events, "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
}

async function interrupted(agent, prompt) {
  agent.addMessage(userMessage(prompt));
  const first = await run(agent);
  const outcome = finished(first, "interrupt");
  expect(agent.pendingInterrupts.length === outcome.interrupts.length, "the client tracks the open interrupts");
  return { first, interrupts: outcome.interrupts };
}

function continuation(result, parent) {
  expect(result.events[0].parentRunId === parent.runId, "RUN_STARTED.parentRunId names the paused run", result.events[0]);
  expect(ofType(result.events, "MESSAGES_SNAPSHOT").length === 1, "the continuation starts with MESSAGES_SNAPSHOT");
}

function approvalResponse(result, interruptId) {
  const found = ofType(result.events, "CUSTOM").filter((e) => e.name === "approval_response" && e.value.approvalId === interruptId);
  expect(found.length === 1, `one CUSTOM approval_response for ${interruptId}`, ofType(result.events, "CUSTOM"));
  return found[0].value;
}

// ------------------------------------------------------------------ scenarios

const scenarios = {};
const shared = {}; // state one scenario hands the next (error_codes continues the interrupt's thread)

scenarios.discovery = async () => {
  const listing = await recordingFetch(`${BASE}/agui/`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  expect(listing.status === 200, "GET /agui/ answers 200", listing.status);
  const banking = (await listing.json()).agents.find((a) => a.name === "banking");
  const modes = Object.fromEntries(banking.tools.map((t) => [t.name, t.approval]));
  expect(modes.transfer_money === "always" && modes.check_balance === "never", "tools list their approval modes", modes);
  const anonymous = await run(newAgent(undefined, { token: "" }), {});
  expect(anonymous.error?.status === 401 && anonymous.events.length === 0, "anonymous → HTTP 401, no events",
    { status: anonymous.error?.status, message: anonymous.error?.message });
  const unknown = new HttpAgent({ url: `${BASE}/agui/no-such-agent/`, headers: { Authorization: `Bearer ${TOKEN}` }, fetch: recordingFetch });
  const missing = await run(unknown, {});
  expect(missing.error?.status === 404, "unknown agent → HTTP 404", missing.error?.message);
  return { agents: banking.tools.length };
};

scenarios.plain_chat = async () => {
  const agent = newAgent();
  agent.addMessage(userMessage("Hello there"));
  const one = await run(agent);
  finished(one);
  const t = types(one.events);
  expect(t[1] === "MESSAGES_SNAPSHOT", "MESSAGES_SNAPSHOT follows RUN_STARTED", t);
  expect(t.includes("TEXT_MESSAGE_START") && t.includes("TEXT_MESSAGE_END"), "streamed text", t);
  expect(text(one).includes("offline demo model"), "the model's reply", text(one));
  // second turn: the client resends its whole history; the server appends only the new message
  agent.addMessage(userMessage("Hello again"));
  const two = await run(agent);
  finished(two);
  const snapshot = ofType(two.events, "MESSAGES_SNAPSHOT")[0].messages;
  const users = snapshot.filter((m) => m.role === "user").map((m) => m.content);
  expect(JSON.stringify(users) === JSON.stringify(["Hello there", "Hello again"]), "history without duplicates", users);
  expect(agent.messages.filter((m) => m.role === "assistant").length === 2, "the client holds both replies");
  return { events: one.events.length + two.events.length };
};

scenarios.tool_call = async () => {
  const agent = newAgent();
  agent.addMessage(userMessage("What's the balance of account 1234567890?"));
  const r = await run(agent);
  finished(r);
  const start = ofType(r.events, "TOOL_CALL_START")[0];
  expect(start?.toolCallName === "check_balance", "TOOL_CALL_START check_balance", start);
  const args = ofType(r.events, "TOOL_CALL_ARGS").filter((e) => e.toolCallId === start.toolCallId).map((e) => e.delta).join("");
  expect(JSON.parse(args).account === "1234567890", "streamed arguments", args);
  expect(toolResult(r, start.toolCallId).content.includes("5432.10 USD"), "the balance in TOOL_CALL_RESULT");
  const call = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === start.toolCallId);
  expect(call?.function.name === "check_balance", "the client assembled the tool call", agent.messages);
  expect(agent.messages.some((m) => m.role === "tool" && m.toolCallId === start.toolCallId), "the client holds the tool result");
  return { toolCallId: start.toolCallId };
};

scenarios.interrupt = async () => {
  // alice's transfer waits for the finance group: information for her, not an interrupt she must
  // answer (AGUI_SSE_REVIEW_WAIT_SECONDS is 0 here: the response ends at the paused run; review.mjs
  // follows a review in one response)
  const agent = newAgent();
  agent.addMessage(userMessage(TRANSFER));
  const first = await run(agent);
  finished(first);
  expect(agent.pendingInterrupts.length === 0, "no interrupt for alice to answer", agent.pendingInterrupts);
  const status = ofType(first.events, "CUSTOM").find((e) => e.name === "approval_status")?.value;
  expect(status?.decidedBy === "finance" && status.approver.kind === "group" && status.approver.group === "finance"
    && status.toolCallId && status.message.startsWith("Transfer 500.00 USD") && status.message.includes("finance"),
    "CUSTOM approval_status: who decides, for people and programs", status);
  expect(!Number.isNaN(Date.parse(status.expiresAt)) && Date.parse(status.expiresAt) > Date.now(), "expiresAt in the future",
    status.expiresAt);
  const it = { id: status.approvalId, toolCallId: status.toolCallId, message: status.message };
  const request = ofType(first.events, "CUSTOM").find((e) => e.name === "approval_request");
  expect(request?.value.approvalId === it.id && request.value.steps[0].toolCallId === it.toolCallId
    && request.value.steps[0].toolCallName === "transfer_money" && request.value.steps[0].arguments.amount === 500
    && it.message.startsWith(request.value.message) && request.value.risk === "high" && request.value.reversible === false,
    "CUSTOM approval_request next to the status", request);
  const started = ofType(first.events, "TOOL_CALL_START")[0];
  expect(started.toolCallId === it.toolCallId, "the paused call was streamed");
  shared.interrupt = { agent, first, it };
  return { interruptId: it.id, threadId: agent.threadId };
};

scenarios.error_codes = async () => {
  if (!shared.interrupt) await scenarios.interrupt();
  const { agent, first, it } = shared.interrupt;
  const approve = { interruptId: it.id, status: "resolved", payload: { approved: true } };
  // forbidden: the requester answers a finance-routed request
  runError(await run(agent, { resume: [approve] }), "forbidden");
  expect(agent.pendingInterrupts.length === 0, "nothing for the client to answer");
  // a new message while finance reviews is refused (another tab, or this one)
  const tab = newAgent(agent.threadId);
  tab.addMessage(userMessage("hello? anyone?"));
  const pending = runError(await run(tab), "interrupt_pending");
  expect(pending.message.includes(it.id) && pending.message.includes("finance"), "interrupt_pending names the request and who decides", pending);
  // resume: [] answers nothing, and nothing of finance's is the client's to answer: a turn, refused the same way
  runError(await run(newAgent(agent.threadId), { resume: [] }), "interrupt_pending");
  runError(await run(agent, { resume: [approve, { interruptId: "no-such-interrupt", status: "resolved", payload: { approved: true } }] }),
    "unknown_interrupt");
  // cancelled: the requester withdraws the call; the continuation ends with outcome cancelled
  const cancelled = await run(agent, { resume: [{ interruptId: it.id, status: "cancelled" }] });
  finished(cancelled, "cancelled");
  continuation(cancelled, first);
  expect(toolResult(cancelled, it.toolCallId).content.includes("cancelled"), "the paused call's result says cancelled");
  expect(approvalResponse(cancelled, it.id).approved === false, "approval_response approved=false");
  expect(agent.pendingInterrupts.length === 0, "no open interrupts left in the client");
  return { interruptId: it.id, threadId: agent.threadId };
};

scenarios.resume_approve = async () => {
  const agent = newAgent();
  const { first, interrupts: [it] } = await interrupted(agent, "Cancel my subscription sub_123");
  expect(it.metadata.approver.kind === "requester", "cancel_subscription is routed to the requester", it.metadata);
  const bad = runError(await run(agent, {
    resume: [{ interruptId: it.id, status: "resolved", payload: { approved: true, arguments: { subscription_id: "" } } }],
  }), "invalid_arguments");
  expect(bad.message.includes("Subscription:"), "invalid_arguments names the field by its label", bad);
  const resume = [{ interruptId: it.id, status: "resolved", payload: { approved: true } }];
  const approved = await run(agent, { resume });
  finished(approved);
  continuation(approved, first);
  expect(approvalResponse(approved, it.id).approved === true, "approval_response approved=true");
  expect(toolResult(approved, it.toolCallId).content === "Subscription sub_123 (Premium) is cancelled.", "executed",
    toolResult(approved, it.toolCallId));
  expect(text(approved).startsWith("Done."), "the model summarises the result", text(approved));
  // the same answer again: nothing runs twice
  runError(await run(agent, { resume }), "already_decided");
  return { interruptId: it.id, toolCallId: it.toolCallId, threadId: agent.threadId };
};

scenarios.resume_reject = async () => {
  const agent = newAgent();
  const { first, interrupts: [it] } = await interrupted(agent, "Cancel my subscription sub_456");
  const feedback = "Keep it, I still use it every day";
  const rejected = await run(agent, { resume: [{ interruptId: it.id, status: "resolved", payload: { approved: false, feedback } }] });
  finished(rejected);
  continuation(rejected, first);
  const result = toolResult(rejected, it.toolCallId).content;
  expect(result.includes("rejected") && result.includes(feedback), "the rejection and its feedback reach the model", result);
  expect(text(rejected).startsWith("I did not go ahead"), "the model does not go ahead", text(rejected));
  expect(approvalResponse(rejected, it.id).approved === false, "approval_response approved=false");
  return { interruptId: it.id, threadId: agent.threadId };
};

scenarios.resume_edit = async () => {
  const agent = newAgent();
  const { first, interrupts: [it] } = await interrupted(agent, "Cancel my subscription sub_789");
  // Microsoft Agent Framework's spelling: {accepted, arguments}
  const edited = await run(agent, {
    resume: [{ interruptId: it.id, status: "resolved", payload: { accepted: true, arguments: { subscription_id: "sub_999" } } }],
  });
  finished(edited);
  continuation(edited, first);
  const result = toolResult(edited, it.toolCallId).content;
  expect(result.includes('subscription_id: "sub_789" -> "sub_999"') && result.includes("Subscription sub_999 (Student) is cancelled."),
    "executed with the edited arguments, and the model is told of the edit", result);
  const response = approvalResponse(edited, it.id);
  expect(response.approved === true && response.arguments?.subscription_id === "sub_999", "approval_response carries the arguments", response);
  return { interruptId: it.id, threadId: agent.threadId };
};

scenarios.expired = async () => {
  if (!CONTROL) throw new Skip("needs AGUI_CONTROL=1 (the test process expires the request)");
  const agent = newAgent();
  const { interrupts: [it] } = await interrupted(agent, "Cancel my subscription sub_789");
  // the deadline passes; the expiry sweep resolves the request and its continuation runs
  await control({ action: "expire", interruptId: it.id, threadId: agent.threadId });
  const late = runError(await run(agent, { resume: [{ interruptId: it.id, status: "resolved", payload: { approved: true } }] }), "expired");
  expect(late.message.includes(it.id), "expired names the interrupt", late);
  // The client still holds the interrupt and insists every run answers it; "cancelled" is the
  // client's way past an interrupt that can no longer be answered. The server takes it as an
  // acknowledgement and runs the new message; the snapshot shows the timed-out call.
  agent.addMessage(userMessage("What happened?"));
  const after = await run(agent, { resume: [{ interruptId: it.id, status: "cancelled" }] });
  finished(after);
  expect(agent.pendingInterrupts.length === 0, "the client's interrupt is cleared");
  const snapshot = ofType(after.events, "MESSAGES_SNAPSHOT")[0].messages;
  expect(snapshot.some((m) => m.role === "tool" && m.toolCallId === it.toolCallId && m.content.includes("timed out")),
    "MESSAGES_SNAPSHOT shows the timed-out call", snapshot);
  return { interruptId: it.id, threadId: agent.threadId };
};

scenarios.multi_interrupt = async () => {
  const agent = newAgent();
  const { first, interrupts } = await interrupted(agent,
    "Transfer $20 from account 1234567890 to account 0987654321, and cancel my subscription sub_321");
  // two risky calls: alice answers the cancellation (an interrupt); finance decides the transfer (a status)
  expect(interrupts.length === 1 && interrupts[0].metadata.toolName === "cancel_subscription", "one interrupt, hers", interrupts);
  const [cancel] = interrupts;
  const status = ofType(first.events, "CUSTOM").find((e) => e.name === "approval_status")?.value;
  expect(status?.toolCallName === "transfer_money" && status.decidedBy === "finance", "the transfer is finance's", status);
  const transfer = { id: status.approvalId, toolCallId: status.toolCallId };
  const missing = runError(await run(newAgent(agent.threadId), { resume: [] }), "missing_resume");
  expect(missing.message.includes(cancel.id) && !missing.message.includes(transfer.id), "missing_resume names only hers", missing);
  // she withdraws the transfer (the requester may) and approves the cancellation in one answer
  const partial = [{ interruptId: cancel.id, status: "resolved", payload: { approved: true } }];
  const both = await run(agent, { resume: [{ interruptId: transfer.id, status: "cancelled" }, ...partial] });
  finished(both);
  continuation(both, first);
  expect(toolResult(both, transfer.toolCallId).content.includes("cancelled"), "the withdrawn transfer");
  expect(toolResult(both, cancel.toolCallId).content.includes("sub_321"), "the approved cancellation ran");
  return { transfer: transfer.id, cancel: cancel.id, threadId: agent.threadId };
};

scenarios.frontend_tool = async () => {
  const agent = newAgent();
  agent.addMessage(userMessage("Celebrate with confetti!"));
  const first = await run(agent, { tools: [CONFETTI_TOOL] });
  const outcome = finished(first);
  const start = ofType(first.events, "TOOL_CALL_START")[0];
  expect(start?.toolCallName === "show_confetti", "the model called the frontend tool", start);
  expect(JSON.stringify(outcome.pendingToolCallIds) === JSON.stringify([start.toolCallId]), "pendingToolCallIds", outcome);
  expect(!ofType(first.events, "TOOL_CALL_RESULT").length, "the server does not run a frontend tool");
  // the application runs the tool and answers with a tool message
  agent.addMessage({ id: `tool-${randomUUID()}`, role: "tool", toolCallId: start.toolCallId, content: "Confetti shown in blue" });
  const second = await run(agent, { tools: [CONFETTI_TOOL] });
  finished(second);
  expect(text(second).includes("Confetti shown in blue"), "the model saw the tool's result", text(second));
  return { toolCallId: start.toolCallId };
};

scenarios.model_unavailable = async () => {
  const agent = newAgent();
  agent.addMessage(userMessage("[unavailable] hello"));
  const r = await run(agent);
  expect(!r.error, `runAgent failed: ${r.error?.message}`);
  const t = types(r.events);
  expect(t[0] === "RUN_STARTED" && t.at(-1) === "RUN_ERROR", "RUN_STARTED … RUN_ERROR", t);
  expect(r.events.at(-1).code === "model_unavailable", "code model_unavailable", r.events.at(-1));
  return {};
};

scenarios.disconnect = async () => {
  if (!CONTROL) throw new Skip("needs AGUI_CONTROL=1 (the test process holds the model's reply)");
  const agent = newAgent();
  agent.addMessage(userMessage("[slow] Tell me about savings accounts"));
  // the model's reply is held back until released; the client goes away as soon as the run starts
  const gone = await run(agent, {}, { onEvent: (e) => { if (e.type === "RUN_STARTED") agent.abortRun(); } });
  expect(!gone.error, `an aborted run resolves quietly: ${gone.error?.message}`);
  expect(!gone.events.some((e) => e.type === "RUN_FINISHED"), "the client left before the end", types(gone.events));
  // nobody else watches the thread: past AGUI_ABANDONED_RUN_GRACE_SECONDS the server asks the run
  // to stop, and it stops at its next check, when the model's reply begins
  await control({ action: "abandoned", threadId: agent.threadId, runId: gone.runId });
  await control({ action: "release", threadId: agent.threadId, runId: gone.runId });
  // the run ended cancelled without its client; the next turn is answered, the held reply never stored
  agent.addMessage(userMessage("Are you done?"));
  const next = await run(agent);
  finished(next);
  const snapshot = ofType(next.events, "MESSAGES_SNAPSHOT")[0].messages;
  expect(!snapshot.some((m) => m.role === "assistant" && (m.content || "").includes("slow answer")),
    "the abandoned run stopped before its reply", snapshot);
  expect(JSON.stringify(snapshot.map((m) => m.role)) === JSON.stringify(["user", "user"]), "both questions, in order",
    snapshot);
  return { runId: gone.runId, threadId: agent.threadId };
};

// ------------------------------------------------------------------ workflows (issue 8)
// Not in ORDER: tests/integration/test_workflow_client.py runs them by name (`node drive.mjs workflow_refund,…`)
// against the `support` workflow and serves their control requests ("decide" as a support
// reviewer; "hold" / "crash" to SIGKILL the worker inside a step and restart it).

const REFUND_PROMPT = "My wireless headphones arrived broken. I'd like a refund.";

function workflowAgent(name, threadId) {
  return new HttpAgent({
    url: `${BASE}/agui/${name}/`, threadId: threadId ?? `thread-${randomUUID()}`,
    headers: { Authorization: `Bearer ${TOKEN}` }, fetch: recordingFetch,
  });
}

/** stepName of each STEP_STARTED; the client's verifier already insists they are paired and closed. */
function stepNames(result) {
  const names = [];
  const open = new Set();
  for (const e of result.events) {
    if (e.type === "STEP_STARTED") { names.push(e.stepName); open.add(e.stepName); }
    if (e.type === "STEP_FINISHED") {
      expect(open.has(e.stepName), `STEP_FINISHED ${e.stepName} has its STEP_STARTED`);
      open.delete(e.stepName);
    }
  }
  if (result.events.at(-1)?.type === "RUN_FINISHED") expect(open.size === 0, "every step closed before RUN_FINISHED", [...open]);
  return names;
}

const customs = (result, name) => ofType(result.events, "CUSTOM").filter((e) => e.name === name).map((e) => e.value);

/** First run and the question: triage hands off, refund_agent asks for the order number. */
async function askedForOrder(agent, forwardedProps) {
  agent.addMessage(userMessage(REFUND_PROMPT));
  const first = await run(agent, { forwardedProps });
  const outcome = finished(first, "interrupt");
  expect(JSON.stringify(stepNames(first)) === JSON.stringify(["triage_agent", "refund_agent"]), "steps triage → refund",
    stepNames(first));
  expect(ofType(first.events, "TOOL_CALL_START")[0]?.toolCallName === "handoff_to_refund_agent", "the handoff is a tool call");
  const [it] = outcome.interrupts;
  expect(outcome.interrupts.length === 1 && it.reason === "input_required" && it.message && it.responseSchema?.required?.[0] === "order_id",
    "one input_required interrupt with a message and responseSchema", outcome.interrupts);
  expect(customs(first, "request_info")[0]?.requestId === it.id, "CUSTOM request_info next to the interrupt");
  expect(customs(first, "status").at(-1)?.state === "idle_with_pending_requests", "CUSTOM status: paused", customs(first, "status"));
  expect(customs(first, "workflow_output").every((o) => o.type === "intermediate"), "intermediate outputs");
  return { first, it };
}

scenarios.workflow_refund = async () => {
  const listing = await recordingFetch(`${BASE}/agui/`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  const support = (await listing.json()).agents.find((a) => a.name === "support");
  expect(support?.workflow?.start === "triage_agent", "GET /agui/ lists the support workflow", support);
  const agent = workflowAgent("support");
  const { first, it } = await askedForOrder(agent, { ticket: "client-secret-ticket-7", channel: "agui-client" });
  // an answer that does not match responseSchema is refused, and the interrupt stays open
  runError(await run(agent, { resume: [{ interruptId: it.id, status: "resolved", payload: { order_id: "abc" } }] }),
    "invalid_payload");
  // the answer: the same agent continues, looks the order up, and submit_refund waits for `support`
  const second = await run(agent, { resume: [{ interruptId: it.id, status: "resolved", payload: { order_id: "12345" } }] });
  finished(second);  // submit_refund waits for `support`: nothing for this client to answer
  continuation(second, first);
  expect(JSON.stringify(stepNames(second)) === JSON.stringify(["refund_agent"]), "resumed in refund_agent, no triage",
    stepNames(second));
  expect(toolResult(second, it.toolCallId).content === 'The person answered: {"order_id": "12345"}',
    "the answer is the tool's result", toolResult(second, it.toolCallId));
  const [approval] = customs(second, "approval_status").map((v) => ({ id: v.approvalId, ...v }));
  expect(approval?.toolCallName === "submit_refund" && approval.approver.group === "support" && approval.decidedBy === "support",
    "CUSTOM approval_status: submit_refund waits for the support group", customs(second, "approval_status"));
  expect(agent.pendingInterrupts.length === 0, "no interrupt the client cannot answer");
  // a support reviewer decides in the inbox; the workflow finishes server-side
  const decided = await control({ action: "decide", username: "rita", interruptId: approval.id, threadId: agent.threadId });
  agent.addMessage(userMessage("Thank you!"));
  const after = await run(agent);
  finished(after);
  expect(agent.pendingInterrupts.length === 0, "no open interrupts");
  const snapshot = ofType(after.events, "MESSAGES_SNAPSHOT")[0].messages;
  expect(snapshot.some((m) => m.role === "assistant" && /Case complete\.$/.test(m.content || "")), "the case was completed",
    snapshot.map((m) => [m.role, m.content]));
  expect(snapshot.filter((m) => m.role === "tool" && m.content.startsWith("Refund of 129.99 USD")).length === 1,
    "one refund result", snapshot);
  // a new case: triage answers the thanks and nobody else moves
  expect(JSON.stringify(stepNames(after)) === JSON.stringify(["triage_agent"]), "the next request starts at triage",
    stepNames(after));
  return { threadId: agent.threadId, questionId: it.id, approvalId: approval.id, completedRunId: decided.runId };
};

scenarios.workflow_restart = async () => {
  if (!CONTROL) throw new Skip("needs AGUI_CONTROL=1 (the test process kills and restarts the worker)");
  const agent = workflowAgent("support_crash");
  const { first, it } = await askedForOrder(agent, { ticket: "client-secret-ticket-8" });
  // the lookup will be held inside the tool; the test SIGKILLs the worker there and restarts it
  await control({ action: "hold", threadId: agent.threadId });
  const answering = run(agent, { resume: [{ interruptId: it.id, status: "resolved", payload: { order_id: "12346" } }] });
  const crash = await control({ action: "crash", threadId: agent.threadId });
  const second = await answering;
  expect(!second.error, `runAgent failed: ${second.error?.message}`);
  const t = types(second.events);
  expect(t[0] === "RUN_STARTED" && t.at(-1) === "RUN_ERROR" && second.events.at(-1).code === "worker_lost",
    "the killed run ends with RUN_ERROR worker_lost", t);
  continuation(second, first);
  // recovery's continuation retried the lookup and paused on the refund; support approves it
  const decided = await control({ action: "decide", username: "rita", interruptId: crash.approvalId, threadId: agent.threadId });
  agent.addMessage(userMessage("Thanks"));
  // the client still holds the question it answered in the run that died: acknowledge it
  const after = await run(agent, { resume: agent.pendingInterrupts.map((p) => ({ interruptId: p.id, status: "cancelled" })) });
  finished(after);
  const snapshot = ofType(after.events, "MESSAGES_SNAPSHOT")[0].messages;
  const calls = snapshot.flatMap((m) => m.toolCalls ?? []).map((c) => c.function.name);
  expect(JSON.stringify(calls) === JSON.stringify(["handoff_to_refund_agent", "request_info", "lookup_order_details",
    "submit_refund"]), "every step once, none repeated", calls);
  expect(snapshot.filter((m) => m.role === "tool").length === 4, "one result per call", snapshot);
  expect(snapshot.some((m) => m.role === "assistant" && /Case complete\.$/.test(m.content || "")), "completed");
  return { threadId: agent.threadId, killedRunId: second.runId, recoveredRunId: crash.runId, completedRunId: decided.runId };
};

// ------------------------------------------------------------------ more scenarios

// Each file in scenarios/ adds the scenarios of one topic (its own pytest test names them on the
// command line): `export default (kit) => ({name: async () => detail, ...})`.
const kit = {
  BASE, TOKEN, AGENT_URL, TRANSFER, CONFETTI_TOOL, log, Skip, expect, types, ofType, userMessage, run, finished,
  runError, toolResult, text, interrupted, continuation, approvalResponse, newAgent, control, recordingFetch, shared,
  HttpAgent, randomUUID,
};
const scenarioDir = path.join(path.dirname(new URL(import.meta.url).pathname), "scenarios");
for (const file of fs.existsSync(scenarioDir) ? fs.readdirSync(scenarioDir).sort() : []) {
  if (!file.endsWith(".mjs")) continue;
  const added = (await import(path.join(scenarioDir, file))).default(kit);
  for (const name of Object.keys(added)) {
    if (scenarios[name]) throw new Error(`scenario ${name} is defined twice (${file})`);
    scenarios[name] = added[name];
  }
}

// ------------------------------------------------------------------ main

const ORDER = ["discovery", "plain_chat", "tool_call", "interrupt", "error_codes", "resume_approve", "resume_reject",
  "resume_edit", "expired", "multi_interrupt", "frontend_tool", "model_unavailable", "disconnect"];

const summary = { ok: true, scenarios: {}, failures: [] };
for (const name of (process.argv[2] ? process.argv[2].split(",") : ORDER)) {
  scenario = name;
  const started = Date.now();
  try {
    if (!scenarios[name]) throw new Error(`no scenario ${name}`);
    const detail = await scenarios[name]();
    summary.scenarios[name] = { status: "passed", ms: Date.now() - started, ...detail };
    log(`✓ ${name} (${Date.now() - started} ms)`);
  } catch (err) {
    if (err instanceof Skip) {
      summary.scenarios[name] = { status: "skipped", reason: err.message };
      log(`- ${name}: skipped (${err.message})`);
      continue;
    }
    summary.ok = false;
    summary.scenarios[name] = { status: "failed", error: err.message.slice(0, 2000) };
    summary.failures.push(`${name}: ${err.message.slice(0, 2000)}`);
    log(`✗ ${name}: ${err.stack}`);
  }
}
scenario = "";
await Promise.all(captures);

// the client warns when it strips or drops something it does not recognise: a protocol deviation
const deviations = warnings.filter((w) => !/Agent execution failed/.test(w.text));
if (deviations.length) {
  summary.ok = false;
  summary.failures.push(...deviations.map((w) => `client ${w.level} in ${w.scenario}: ${w.text}`));
}
summary.warnings = warnings;

fs.mkdirSync(path.join(OUT, "streams"), { recursive: true });
const lines = [];
let eventCount = 0;
for (const s of streams) {
  const file = path.join("streams", `${String(s.index).padStart(3, "0")}-${s.scenario}.sse`);
  fs.writeFileSync(path.join(OUT, file), s.body);
  s.file = file;
  if (s.status !== 200 || !s.contentType.startsWith("text/event-stream")) continue;
  for (const frame of s.body.split("\n\n")) {
    const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, ""));
    if (!data.length) continue;
    lines.push(JSON.stringify({ stream: s.index, scenario: s.scenario, event: JSON.parse(data.join("\n")) }));
    eventCount += 1;
  }
}
fs.writeFileSync(path.join(OUT, "events.jsonl"), lines.join("\n") + "\n");
summary.streams = streams.map(({ body, ...meta }) => ({ ...meta, bytes: body.length }));
summary.events = eventCount;
// no process.exit(): it can cut a piped stdout short; the process ends once stdin is released
stdin?.close();
process.exitCode = summary.ok ? 0 : 1;
process.stdout.write(JSON.stringify(summary) + "\n");
