// The decisions a tool's policy offers (tests/integration/test_agui_client_decisions.py sets
// cancel_subscription to approve / reject / respond): the interrupt's responseSchema offers only
// those, an answer it does not offer is refused in-stream and leaves the interrupt open, and a
// "respond" answer (guidance instead of running the call) reaches the model as the call's result.
export default ({ expect, ofType, run, finished, runError, interrupted, toolResult, text, newAgent }) => ({
  resume_respond: async () => {
    const agent = newAgent();
    const { first, interrupts: [it] } = await interrupted(agent, "Cancel my subscription sub_123");
    const schema = it.responseSchema;
    expect(JSON.stringify(schema.properties.decision.enum) === JSON.stringify(["approve", "reject", "respond"]),
      "responseSchema offers the policy's decisions only", schema);
    expect(!("arguments" in schema.properties), "no edit offered: no arguments to send", schema.properties);
    expect(schema.properties.feedback.type === "string", "feedback carries the guidance", schema.properties);

    const edit = runError(await run(agent, { resume: [{ interruptId: it.id, status: "resolved",
      payload: { decision: "edit", arguments: { subscription_id: "sub_456" } } }] }), "decision_not_allowed");
    expect(/approve, reject or answer with guidance|answer with guidance/.test(edit.message),
      "the refusal says what may be answered", edit);
    runError(await run(agent, { resume: [{ interruptId: it.id, status: "resolved", payload: { decision: "respond" } }] }),
      "feedback_required");

    const guidance = "Pause it for a month instead of cancelling";
    const answered = await run(agent, { resume: [{ interruptId: it.id, status: "resolved",
      payload: { decision: "respond", feedback: guidance } }] });
    finished(answered);
    expect(answered.events[0].parentRunId === first.runId, "the continuation names the paused run", answered.events[0]);
    const response = ofType(answered.events, "CUSTOM").find((e) => e.name === "approval_response")?.value;
    expect(response?.approvalId === it.id && response.approved === false, "approval_response: not approved", response);
    const result = toolResult(answered, it.toolCallId).content;
    expect(result.includes(guidance) && !result.includes("is cancelled"), "the guidance is the call's result", result);
    expect(text(answered).includes(guidance), "the model read it and answers", text(answered));
    expect(agent.pendingInterrupts.length === 0, "nothing left open", agent.pendingInterrupts);
    return { threadId: agent.threadId, interruptId: it.id, toolCallId: it.toolCallId };
  },
});
