// The client against a real `memory serve` (tests/test_typescript_client.py starts it and
// passes MEMORY_URL, MEMORY_API_KEY for namespace "aaron" and MEMORY_OTHER_KEY for "bea").
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { MemoryClient, MemoryError } from "@agent-memory/client";

const baseUrl = process.env.MEMORY_URL;
const aaron = new MemoryClient({ baseUrl, apiKey: process.env.MEMORY_API_KEY });
const bea = new MemoryClient({ baseUrl, apiKey: process.env.MEMORY_OTHER_KEY });

async function refusal(promise) {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof MemoryError, String(error));
    return error;
  }
  assert.fail("expected a refusal");
}

describe("a key", () => {
  it("says whose it is", async () => {
    const me = await aaron.whoami();
    assert.equal(me.namespace, "aaron");
    assert.equal(me.agent, "ts-agent");
  });

  it("that is wrong is refused with 401 and the reason", async () => {
    const stranger = new MemoryClient({ baseUrl, apiKey: "mem_not_a_key" });
    const error = await refusal(stranger.inject("anything"));
    assert.equal(error.status, 401);
    assert.match(error.reason, /API key/);
  });

  it("cannot read another namespace", async () => {
    const nosy = new MemoryClient({ baseUrl, apiKey: process.env.MEMORY_API_KEY, namespace: "bea" });
    const error = await refusal(nosy.search("anything"));
    assert.equal(error.status, 403);
  });
});

describe("the memory", () => {
  it("shows a remembered fact at once, pending, with a short id the other calls take", async () => {
    const written = await aaron.remember("My WRX oil change is due at 11,799 miles.");
    assert.equal(written.status, "pending");
    assert.match(written.ref, /^p:\d{6}$/);
    const block = await aaron.inject("When is my WRX oil change due?");
    assert.match(block.text, /11,799 miles/);
    const line = block.items.find((item) => item.content.includes("11,799"));
    assert.equal(line.ref, written.ref);
    assert.ok(line.flags.includes("[pending]"), line.flags.join(" "));
    assert.equal((await aaron.get(written.ref)).content, "My WRX oil change is due at 11,799 miles.");
    const found = await aaron.search("oil change", { k: 3 });
    assert.ok(found.some((hit) => hit.id === written.id && hit.relevance > 0));
  });

  it("is the key's own: another namespace sees none of it", async () => {
    const block = await bea.inject("When is my WRX oil change due?");
    assert.doesNotMatch(block.text, /11,799/);
  });

  it("takes a correction and a forget from the next call", async () => {
    const written = await aaron.remember("I park the car in garage B.");
    await aaron.update(written.ref, "I park the car in garage D.");
    assert.match((await aaron.inject("Where do I park the car?")).text, /garage D/);
    const forgotten = await aaron.forget(written.ref);
    assert.equal(forgotten.applied, "now");
    assert.doesNotMatch((await aaron.inject("Where do I park the car?")).text, /garage/);
  });

  it("records which lines the reply used", async () => {
    const block = await aaron.inject("When is my WRX oil change due?");
    const refs = block.items.map((item) => item.ref);
    const used = await aaron.recordResponse(refs, "Your WRX oil change is due at 11,799 miles.");
    assert.ok(Object.values(used.used).includes(true));
  });

  it("lists pending writes and exports as JSON Lines", async () => {
    const pending = await aaron.list({ status: "pending" });
    assert.ok(pending.some((row) => row.content.includes("11,799")));
    const lines = (await aaron.exportJsonl()).trim().split("\n").map((line) => JSON.parse(line));
    assert.equal(lines[0].namespace, "aaron");  // the header: format, version, counts
    assert.ok(lines[0].format && lines[0].counts);
    assert.deepEqual(await aaron.lessons(), []);
  });

  it("refuses what is out of bounds with the reason", async () => {
    const error = await refusal(aaron.search("oil", { k: 1000 }));
    assert.equal(error.status, 422);
    assert.match(error.reason, /k/);
  });
});

describe("a live session", () => {
  it("checkpoints turns, replays them and hands them over", async () => {
    const saved = await aaron.appendTurn("ts-session-1", 1, {
      user_input: "We decided to ship the release on Friday.",
      llm_output: "Noted: release on Friday.",
    });
    assert.equal(saved.turn, 1);
    await aaron.appendTurn("ts-session-1", 2, { user_input: "Thanks!", llm_output: "Any time." });
    const turns = await aaron.replay("ts-session-1");
    assert.deepEqual(turns.map((t) => t.turn), [1, 2]);
    assert.equal(turns[0].record.user_input, "We decided to ship the release on Friday.");
    const again = await refusal(aaron.appendTurn("ts-session-1", 1, { user_input: "other words" }));
    assert.equal(again.status, 409);
    assert.equal((await aaron.flushSession("ts-session-1")).written, true);
  });
});
