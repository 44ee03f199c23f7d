// Approvals that someone else decides (tests/integration/test_agui_client_review.py): alice's
// transfer waits for the finance group. Her stock HttpAgent gets no interrupt it cannot answer
// (CUSTOM approval_status says who decides), her response stays open while finance reviews
// (AGUI_SSE_REVIEW_WAIT_SECONDS) and carries the continuation, and past the wait a plain
// runAgent (no new message, no resume) streams what happened since, or follows what still waits.
// Control "approve_as_finn" {approvalId, threadId, waitFinished?}: finn approves in the inbox.

export default (kit) => {
  const { TRANSFER, expect, types, ofType, userMessage, run, finished, newAgent, control } = kit;

  const statusOf = (result) => ofType(result.events, "CUSTOM").find((e) => e.name === "approval_status")?.value;

  /** The paused run as alice sees it: who decides, and an end with nothing for her to answer. */
  function paused(result, runId) {
    const status = statusOf(result);
    expect(status?.decidedBy === "finance" && status.approver.group === "finance" && status.toolCallName === "transfer_money"
      && status.message.startsWith("Transfer 500.00 USD") && status.message.includes("finance"),
    "CUSTOM approval_status names who decides, in a sentence and in fields", status);
    const ends = result.events.filter((e) => e.type === "RUN_FINISHED" && e.runId === runId);
    expect(ends.length === 1 && ends[0].outcome === undefined, "the paused run ends without an interrupt", ends);
    return status;
  }

  /** The continuation after the paused run's RUN_FINISHED: its own run, the result, the answer. */
  function continued(result, pausedRunId, status) {
    const start = result.events.findIndex((e) => e.type === "RUN_STARTED" && e.parentRunId === pausedRunId);
    expect(start > 0 && result.events[start - 1].type === "RUN_FINISHED" && result.events[start - 1].runId === pausedRunId,
      "RUN_STARTED(parentRunId) right after the paused run's RUN_FINISHED", types(result.events));
    const tail = result.events.slice(start);
    expect(tail[1].type === "MESSAGES_SNAPSHOT", "the continuation opens with the conversation", types(tail));
    const response = ofType(tail, "CUSTOM").find((e) => e.name === "approval_response")?.value;
    expect(response?.approvalId === status.approvalId && response.approved === true, "approval_response: finance approved", response);
    expect(tail.at(-1).type === "RUN_FINISHED" && tail.at(-1).runId === tail[0].runId && !tail.at(-1).outcome,
      "the continuation finishes", tail.at(-1));
    return tail;
  }

  function holdsResult(agent, toolCallId) {
    const result = agent.messages.find((m) => m.role === "tool" && m.toolCallId === toolCallId);
    expect(result?.content.startsWith("Transferred 500.00 USD"), "the client holds the transfer's result", agent.messages);
    expect(agent.pendingInterrupts.length === 0, "no open interrupt blocks the next run", agent.pendingInterrupts);
  }

  return {
    review_followed: async () => {
      const agent = newAgent();
      agent.addMessage(userMessage(TRANSFER));
      let status = null;
      let deciding = null;
      const r = await run(agent, {}, {
        onEvent: (e) => {
          if (e.type === "CUSTOM" && e.name === "approval_status") status = e.value;
          // finn decides once the paused run has ended, while this response waits
          if (e.type === "RUN_FINISHED" && status && !deciding) {
            deciding = control({ action: "approve_as_finn", approvalId: status.approvalId, threadId: agent.threadId });
          }
        },
      });
      expect(deciding, "the paused run ended with its status", types(r.events));
      await deciding;
      finished(r);
      paused(r, r.runId);
      const tail = continued(r, r.runId, status);
      const result = ofType(tail, "TOOL_CALL_RESULT")[0];
      expect(result?.toolCallId === status.toolCallId && result.content.startsWith("Transferred 500.00 USD"),
        "the transfer ran: its result in the same response", result);
      expect(ofType(tail, "TEXT_MESSAGE_CONTENT").length > 0, "the model's answer follows");
      holdsResult(agent, status.toolCallId);
      return { threadId: agent.threadId, approvalId: status.approvalId, continuationRunId: tail[0].runId };
    },

    review_past_wait: async () => {
      const agent = newAgent();
      agent.addMessage(userMessage(TRANSFER));
      const first = await run(agent);  // nobody decides within the wait: the response ends at the paused run
      finished(first);
      const status = paused(first, first.runId);
      expect(!first.events.some((e) => e.type === "RUN_STARTED" && e.parentRunId), "no continuation yet");
      const decided = await control({ action: "approve_as_finn", approvalId: status.approvalId, threadId: agent.threadId,
        waitFinished: true });
      // back: a plain POST, nothing new and no resume: what happened since
      const back = await run(agent);
      expect(!back.error, `runAgent failed: ${back.error?.message}`);
      const t = types(back.events);
      expect(JSON.stringify(t) === JSON.stringify(["RUN_STARTED", "MESSAGES_SNAPSHOT", "CUSTOM", "RUN_FINISHED"]),
        "the continuation she did not see, rebuilt", t);
      expect(back.events[0].runId === decided.runId && back.events[0].parentRunId === first.runId
        && back.events[0].runId !== back.runId, "RUN_STARTED names the continuation (parentRunId: the paused run)", back.events[0]);
      const response = back.events[2];
      expect(response.name === "approval_response" && response.value.approvalId === status.approvalId
        && response.value.approved === true, "approval_response", response);
      holdsResult(agent, status.toolCallId);
      expect(agent.messages.at(-1).role === "assistant" && agent.messages.at(-1).content, "and the model's answer");
      return { threadId: agent.threadId, approvalId: status.approvalId, continuationRunId: decided.runId,
        plainRunId: back.runId };
    },

    review_reconnect: async () => {
      const agent = newAgent();
      agent.addMessage(userMessage(TRANSFER));
      const first = await run(agent);
      finished(first);
      const status = paused(first, first.runId);
      // back while finance still reviews: the paused run again, then the decision as it comes
      let deciding = null;
      const back = await run(agent, {}, {
        onEvent: (e) => {
          if (e.type === "RUN_FINISHED" && e.runId === first.runId && !deciding) {
            deciding = control({ action: "approve_as_finn", approvalId: status.approvalId, threadId: agent.threadId });
          }
        },
      });
      expect(deciding, "the paused run was shown again", types(back.events));
      await deciding;
      expect(!back.error, `runAgent failed: ${back.error?.message}`);
      expect(back.events[0].type === "RUN_STARTED" && back.events[0].runId === first.runId, "the paused run, rebuilt",
        back.events[0]);
      paused(back, first.runId);
      continued(back, first.runId, status);
      holdsResult(agent, status.toolCallId);
      return { threadId: agent.threadId, approvalId: status.approvalId, plainRunId: back.runId };
    },
  };
};
