// An interrupt decided elsewhere (the requester approves in the inbox, by mail, in another tab)
// while a stock client still holds it (tests/integration/test_agui_client_elsewhere.py). The client
// refuses every run that does not answer it; answering it `resolved` is refused already_decided,
// and the client keeps it. `cancelled` is its way past: the server answers with what became of the
// interrupt (the continuation it has not seen), asks no model, and the client is free again.
export default ({ expect, ofType, run, finished, runError, interrupted, userMessage, newAgent, control }) => ({
  decided_elsewhere: async () => {
    const agent = newAgent();
    const { interrupts: [it] } = await interrupted(agent, "Cancel my subscription sub_456");
    const { runId: continuationId } = await control({ action: "approve_as_alice", interruptId: it.id, threadId: agent.threadId });

    runError(await run(agent, { resume: [{ interruptId: it.id, status: "resolved", payload: { approved: true } }] }),
      "already_decided");
    expect(agent.pendingInterrupts.length === 1, "the client still holds the interrupt after a RUN_ERROR",
      agent.pendingInterrupts);

    const past = await run(agent, { resume: [{ interruptId: it.id, status: "cancelled" }] });
    expect(!past.error, `runAgent failed: ${past.error?.message}`);
    const started = ofType(past.events, "RUN_STARTED").map((e) => e.runId);
    expect(started.length === 1 && started[0] === continuationId, "the continuation it had not seen, no new run", started);
    expect(past.events.at(-1).type === "RUN_FINISHED" && (past.events.at(-1).outcome ?? { type: "success" }).type === "success",
      "ends with RUN_FINISHED, success", past.events.at(-1));
    const response = ofType(past.events, "CUSTOM").find((e) => e.name === "approval_response")?.value;
    expect(response?.approvalId === it.id && response.approved === true, "approval_response: approved", response);
    const snapshot = ofType(past.events, "MESSAGES_SNAPSHOT")[0]?.messages ?? [];
    expect(snapshot.some((m) => m.role === "tool" && m.toolCallId === it.toolCallId && m.content.includes("sub_456")),
      "the snapshot holds the call's result", snapshot);
    expect(agent.pendingInterrupts.length === 0, "the client's interrupt is cleared", agent.pendingInterrupts);

    agent.addMessage(userMessage("Thanks"));
    finished(await run(agent));
    return { threadId: agent.threadId, interruptId: it.id, toolCallId: it.toolCallId, cancelRunId: past.runId };
  },
});
