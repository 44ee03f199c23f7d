// How a run ends when the model misbehaves, as the official client sees it
// (tests/integration/test_agui_client_run_ends.py gives the model's side): a run past AGUI_MAX_TURNS
// (turn_limit), an answer cut at the model's length limit (answer_cut), an empty answer (model_error)
// and frontend tools the model's API refuses (invalid_tools) each end with one RUN_ERROR the client's
// verification accepts, and the thread goes on with the next message; a call id the model reuses
// (servers that number their calls call_0 in each answer) is replaced by one id used alike in
// TOOL_CALL_START / ARGS / END / RESULT, the client's messages, pendingToolCallIds and MESSAGES_SNAPSHOT,
// and a frontend tool's round trip under it works.
export default ({ CONFETTI_TOOL, expect, ofType, types, userMessage, run, finished, runError, text, newAgent,
  randomUUID }) => {
  const snapshotOf = (result) => ofType(result.events, "MESSAGES_SNAPSHOT").at(-1)?.messages ?? [];

  /** A run that ended with RUN_ERROR `code` after it started (not a refusal before anything ran). */
  function failedWith(result, code) {
    expect(!result.error, `runAgent failed (verification or transport): ${result.error?.message}`);
    const t = types(result.events);
    expect(t[0] === "RUN_STARTED" && t.at(-1) === "RUN_ERROR", "RUN_STARTED … RUN_ERROR", t);
    expect(t.filter((x) => x === "RUN_ERROR").length === 1 && !t.includes("RUN_FINISHED"), "one RUN_ERROR, no RUN_FINISHED", t);
    const error = result.events.at(-1);
    expect(error.code === code && typeof error.message === "string" && error.message.length > 0,
      `RUN_ERROR ${code} with a sentence`, error);
    return error;
  }

  /** The next message on the thread is answered: the failure left nothing open. */
  async function goesOn(agent, options = {}) {
    agent.addMessage(userMessage("[plain] are you still there?"));
    const next = await run(agent, options);
    finished(next);
    expect(text(next) === "Still here.", "the next message is answered", text(next));
    return next;
  }

  /** Every id a stream gives one call is the same id. */
  function oneIdPerCall(result) {
    const starts = ofType(result.events, "TOOL_CALL_START").map((e) => e.toolCallId);
    for (const type of ["TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]) {
      const unknown = ofType(result.events, type).filter((e) => !starts.includes(e.toolCallId));
      expect(!unknown.length, `${type} names a call TOOL_CALL_START opened`, { starts, unknown });
    }
    return starts;
  }

  return {
    ends_turn_limit: async () => {
      const agent = newAgent();
      agent.addMessage(userMessage("[loop] check my balance forever"));
      const first = await run(agent);
      const error = failedWith(first, "turn_limit");
      oneIdPerCall(first);
      expect(ofType(first.events, "TOOL_CALL_RESULT").length >= 2, "the tools ran until the limit", types(first.events));
      const next = await goesOn(agent);
      const held = snapshotOf(next).filter((m) => m.role === "tool").length;
      expect(held >= 2, "the results stay in the thread's history", snapshotOf(next));
      return { threadId: agent.threadId, message: error.message };
    },

    ends_answer_cut: async () => {
      const agent = newAgent();
      agent.addMessage(userMessage("[cut] tell me everything, with confetti"));
      const handed = []; // what a page that runs its frontend tools as they complete would run
      const watch = agent.subscribe({ onNewToolCall: ({ toolCall }) => { handed.push(toolCall.function.name); } });
      const first = await run(agent, { tools: [CONFETTI_TOOL] });
      watch.unsubscribe();
      const error = failedWith(first, "answer_cut");
      expect(!handed.length && !types(first.events).includes("TOOL_CALL_END"),
        "the cut call is not handed over as complete (its arguments were cut)", { handed, events: types(first.events) });
      expect(text(first).startsWith("Here is the first part"), "the text said so far was streamed", text(first));
      // the client holds the half-made call; it resends it with the history and the thread goes on
      const next = await goesOn(agent, { tools: [CONFETTI_TOOL] });
      const kept = snapshotOf(next).filter((m) => m.role === "assistant").map((m) => m.content);
      expect(kept.some((c) => (c ?? "").startsWith("Here is the first part")), "the text is kept", kept);
      return { threadId: agent.threadId, message: error.message };
    },

    frontend_refused: async () => {
      // arguments that are no object: the model is told why and answers; the client never hears of the
      // call (it heard START/ARGS/END, and a page running its tools as they complete ran it with them)
      const agent = newAgent();
      agent.addMessage(userMessage("[array] confetti with a list"));
      const handed = [];
      const watch = agent.subscribe({ onNewToolCall: ({ toolCall }) => { handed.push(toolCall.function.name); } });
      const first = await run(agent, { tools: [CONFETTI_TOOL] });
      watch.unsubscribe();
      const outcome = finished(first);
      expect(!ofType(first.events, "TOOL_CALL_START").length && !handed.length, "the client heard of no call",
        { handed, events: types(first.events) });
      expect(!(outcome.pendingToolCallIds ?? []).length, "nothing for the client to run", outcome);
      expect(text(first).startsWith("Told: Error: invalid arguments"), "the model was told", text(first));
      await goesOn(agent, { tools: [CONFETTI_TOOL] });
      return { threadId: agent.threadId };
    },

    ends_model_error: async () => {
      const agent = newAgent();
      agent.addMessage(userMessage("[empty] hello?"));
      const error = failedWith(await run(agent), "model_error");
      await goesOn(agent);
      return { threadId: agent.threadId, message: error.message };
    },

    ends_invalid_tools: async () => {
      const agent = newAgent();
      agent.addMessage(userMessage("[plain] hello"));
      const spaced = { ...CONFETTI_TOOL, name: "show confetti" };
      const refused = runError(await run(agent, { tools: [spaced] }), "invalid_tools");
      expect(refused.message.includes("show confetti"), "the refusal names the tool", refused);
      // a frontend tool named as one of the agent's own would never be the one called
      const mine = { ...CONFETTI_TOOL, name: "check_balance" };
      const taken = runError(await run(agent, { tools: [mine] }), "invalid_tools");
      expect(taken.message.includes("check_balance"), "the refusal names the taken name", taken);
      // nothing was stored: the same message with valid tools is the thread's first turn
      const next = await run(agent, { tools: [CONFETTI_TOOL] });
      finished(next);
      const users = snapshotOf(next).filter((m) => m.role === "user");
      expect(users.length === 1, "the refused run stored nothing", snapshotOf(next));
      return { threadId: agent.threadId };
    },

    ids_reused: async () => {
      const agent = newAgent();
      const seen = [];
      for (const prompt of ["[call0] balance of 1234567890", "[call0] balance of 1234567890 again"]) {
        agent.addMessage(userMessage(prompt));
        const r = await run(agent);
        finished(r);
        const [id] = oneIdPerCall(r);
        expect(ofType(r.events, "TOOL_CALL_RESULT").length === 1, "the balance came back", types(r.events));
        seen.push(id);
      }
      expect(seen[0] !== seen[1], "the reused id was replaced", seen);
      // a frontend tool under a reused id: what the client is asked to run is what it answers
      agent.addMessage(userMessage("[call0] confetti please"));
      const asked = await run(agent, { tools: [CONFETTI_TOOL] });
      const outcome = finished(asked);
      const [callId] = oneIdPerCall(asked);
      expect(!seen.includes(callId), "a fresh id again", { seen, callId });
      expect(JSON.stringify(outcome.pendingToolCallIds) === JSON.stringify([callId]), "pendingToolCallIds names it", outcome);
      const held = agent.messages.flatMap((m) => m.toolCalls ?? []).map((c) => c.id);
      expect(JSON.stringify(held) === JSON.stringify([...seen, callId]), "the client holds the calls by those ids", held);
      agent.addMessage({ id: `tool-${randomUUID()}`, role: "tool", toolCallId: callId, content: "Confetti shown" });
      const answered = await run(agent, { tools: [CONFETTI_TOOL] });
      finished(answered);
      expect(text(answered) === "Done: Confetti shown", "the model read the result", text(answered));
      const snapshot = snapshotOf(answered);
      const calls = snapshot.flatMap((m) => m.toolCalls ?? []).map((c) => c.id);
      const results = snapshot.filter((m) => m.role === "tool").map((m) => m.toolCallId);
      expect(JSON.stringify(calls) === JSON.stringify([...seen, callId]) && JSON.stringify(results) === JSON.stringify(calls),
        "MESSAGES_SNAPSHOT holds the calls and their results by the same ids", snapshot);
      return { threadId: agent.threadId, ids: [...seen, callId] };
    },

    ids_reused_interrupt: async () => {
      // call_0 is taken (ids_reused): the approval's interrupt names the id the call was announced under
      const agent = newAgent();
      agent.addMessage(userMessage("[call0] cancel subscription sub_789"));
      const first = await run(agent);
      const outcome = finished(first, "interrupt");
      const [callId] = oneIdPerCall(first);
      expect(callId !== "call_0", "a fresh id", callId);
      expect(outcome.interrupts.length === 1 && outcome.interrupts[0].toolCallId === callId,
        "the interrupt names the announced call", outcome.interrupts);
      const second = await run(agent, { resume: [{ interruptId: outcome.interrupts[0].id, status: "resolved",
        payload: { approved: true } }] });
      finished(second);
      const result = ofType(second.events, "TOOL_CALL_RESULT");
      expect(result.length === 1 && result[0].toolCallId === callId, "the result names it too", result);
      const snapshot = snapshotOf(second);
      expect(snapshot.some((m) => (m.toolCalls ?? []).some((c) => c.id === callId)), "the snapshot holds the call", snapshot);
      // the snapshot is the conversation before the continuation: the result and the answer come once
      // each, from the stream (a quick worker had stored them before the snapshot was read: the client
      // kept the result twice, and the answer's text doubled)
      expect(agent.messages.filter((m) => m.role === "tool" && m.toolCallId === callId).length === 1,
        "the client holds one result for it", agent.messages);
      const answers = agent.messages.filter((m) => m.role === "assistant" && m.content).map((m) => m.content);
      expect(JSON.stringify(answers) === JSON.stringify(["Done: Subscription sub_789 (Family) is cancelled."]),
        "and the answer once", answers);
      return { threadId: agent.threadId, toolCallId: callId };
    },
  };
};
