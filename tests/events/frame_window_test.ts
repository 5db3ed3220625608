/**
 * The frame window on its own: frames are the public event's SSE frames, back to back; a slice
 * handed to a subscriber keeps its bytes while the window grows and trims under it; a window
 * given more entries than it holds keeps the latest; resume points before, inside, at the end of
 * and past the window; slices and whole answers end at the first terminal entry; a gap is
 * refused and entries held already are skipped.
 *
 * @module
 */
import assert from "node:assert/strict";
import { FrameWindow } from "../../server/runs/_frame_window.ts";
import { eventFrame } from "../../server/runs/public_event.ts";
import type { RunEventEntry } from "../../server/store/types.ts";

const DECODER = new TextDecoder();
const PREFIX = "retry: 2000\n\n";

/** Entries `from`…`to`; those in `terminals` end a turn; `pad` lengthens each message. */
function entries(from: number, to: number, terminals: number[] = [], pad = ""): RunEventEntry[] {
  const out: RunEventEntry[] = [];
  for (let seq = from; seq <= to; seq++) {
    const event = terminals.includes(seq)
      ? { type: "run.completed", runId: "run_w", stopReason: "end_turn" }
      : { type: "message.completed", runId: "run_w", text: `m${seq} ✓ "q"${pad}` };
    out.push({
      seq,
      at: "2026-01-01T00:00:00Z",
      sourceId: `sevt_${seq}`,
      event: event as RunEventEntry["event"],
    });
  }
  return out;
}

/** The frames of `list`, as the window should hold them. */
function frames(list: RunEventEntry[]): string {
  return list.map(eventFrame).join("");
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

function ids(body: Uint8Array | string): number[] {
  const text = typeof body === "string" ? body : DECODER.decode(body);
  return [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
}

Deno.test("frame window: frames are the public events' SSE frames, encoded once, back to back", () => {
  const window = new FrameWindow(10);
  const list = entries(1, 3);
  assert.equal(window.append(list), true);
  assert.equal(window.count, 3);
  assert.equal(window.last, 3);
  const slice = window.after(0)!;
  assert.equal(DECODER.decode(slice.bytes), frames(list));
  assert.deepEqual({ last: slice.last, terminal: slice.terminal }, { last: 3, terminal: false });
  const data = JSON.parse(DECODER.decode(window.after(2)!.bytes).split("\ndata: ")[1]);
  assert.deepEqual(data, {
    seq: 3,
    at: "2026-01-01T00:00:00Z",
    type: "message.completed",
    runId: "run_w",
    text: 'm3 ✓ "q"',
  });
});

Deno.test("frame window: a slice queued for a subscriber keeps its bytes while the window trims", () => {
  // Frames of about 10 KB, one append at a time as a live run's: the buffer grows past its first
  // 64 KiB, then trims with room to spare (a window that trimmed in place, in a buffer big enough
  // already, would overwrite bytes still queued for a socket).
  const pad = "x".repeat(10_000);
  const window = new FrameWindow(8);
  const append = (seq: number) => window.append(entries(seq, seq, [], pad));
  for (let seq = 1; seq <= 20; seq++) append(seq);
  const queued = window.after(16)!; // handed to a stream, not yet written to its socket
  const expected = frames(entries(17, 20, [], pad));
  assert.equal(DECODER.decode(queued.bytes), expected);
  let trims = 0;
  for (let seq = 21; seq <= 60; seq++) {
    const before = window.count;
    append(seq);
    if (window.count <= before) trims++;
    assert.equal(DECODER.decode(queued.bytes), expected, `intact after appending ${seq}`);
  }
  assert.ok(trims >= 2, `the window trimmed past the queued slice's entries (${trims} trims)`);
  assert.ok(
    window.count >= 8 && window.count <= 10,
    `8 entries, or a quarter more: ${window.count}`,
  );
  assert.equal(window.last, 60);
  // The stream that sent the queued slice resumes after 20, before the window: it reads the store.
  assert.equal(window.after(queued.last), null);
  const first = window.last - window.count + 1;
  assert.equal(DECODER.decode(window.after(first - 1)!.bytes), frames(entries(first, 60, [], pad)));
});

Deno.test("frame window: more entries than it holds keeps the latest `max`", () => {
  const window = new FrameWindow(100);
  assert.equal(window.append(entries(1, 1_000)), true);
  assert.ok(window.count >= 100 && window.count <= 125, `held ${window.count}`);
  assert.equal(window.last, 1_000);
  const first = window.last - window.count + 1;
  assert.equal(window.after(first - 2), null, "before the window: read the store");
  const all = window.after(first - 1)!;
  assert.deepEqual(ids(all.bytes), range(first, 1_000));
  assert.equal(DECODER.decode(all.bytes), frames(entries(first, 1_000)));
  // One more entry after a trim lands at the end, as usual.
  window.append(entries(1_001, 1_001));
  assert.deepEqual(ids(window.after(999)!.bytes), [1_000, 1_001]);
});

Deno.test("frame window: resume points before, inside, at the end of and past the window", () => {
  const window = new FrameWindow(10);
  window.reset(20); // the window starts after 20 (a feed's start hint)
  window.append(entries(21, 25));
  assert.equal(window.after(5), null, "long before the window");
  assert.equal(window.after(19), null, "one entry before the window");
  assert.deepEqual(ids(window.after(20)!.bytes), [21, 22, 23, 24, 25], "from its first entry");
  const inside = window.after(22)!;
  assert.deepEqual(ids(inside.bytes), [23, 24, 25]);
  assert.deepEqual({ last: inside.last, terminal: inside.terminal }, { last: 25, terminal: false });
  const atEnd = window.after(25)!;
  assert.deepEqual(
    { bytes: atEnd.bytes.length, last: atEnd.last, terminal: atEnd.terminal },
    { bytes: 0, last: 25, terminal: false },
    "nothing yet: the stream waits",
  );
  const past = window.after(30)!;
  assert.deepEqual({ bytes: past.bytes.length, last: past.last }, { bytes: 0, last: 30 });
  assert.equal(window.isTerminal(20), undefined, "not held");
  assert.equal(window.isTerminal(26), undefined, "not held");
  assert.equal(window.isTerminal(23), false);
});

Deno.test("frame window: slices and whole answers end at the first terminal entry after the resume point", () => {
  const window = new FrameWindow(50);
  window.append(entries(1, 9, [4, 7]));
  assert.equal(window.isTerminal(4), true);
  assert.equal(window.isTerminal(5), false);
  const firstTurn = window.after(0)!;
  assert.deepEqual(ids(firstTurn.bytes), [1, 2, 3, 4]);
  assert.deepEqual({ last: firstTurn.last, terminal: firstTurn.terminal }, {
    last: 4,
    terminal: true,
  });
  assert.deepEqual(ids(window.after(4)!.bytes), [5, 6, 7]);
  assert.equal(window.after(4)!.terminal, true);
  const open = window.after(7)!;
  assert.deepEqual(ids(open.bytes), [8, 9]);
  assert.equal(open.terminal, false, "the turn after 7 has not ended");

  const answer = window.answer(2, PREFIX)!;
  assert.equal(answer, "retry: 2000\n\n" + frames(entries(3, 4, [4])));
  assert.equal(window.answer(2, PREFIX), answer, "kept: the same body for the next request");
  assert.equal(window.answer(7, PREFIX), null, "no terminal entry yet: no whole answer");
  window.append(entries(10, 10, [10]));
  assert.deepEqual(ids(window.answer(7, PREFIX)!), [8, 9, 10], "answered once its turn ended");
});

Deno.test("frame window: entries held already are skipped; a gap is refused", () => {
  const window = new FrameWindow(10);
  window.append(entries(1, 3));
  assert.equal(window.append(entries(2, 5)), true, "2 and 3 skipped, 4 and 5 appended");
  assert.deepEqual(ids(window.after(0)!.bytes), [1, 2, 3, 4, 5]);
  assert.equal(window.append(entries(7, 8)), false, "6 is missing");
  assert.equal(window.last, 5, "nothing past the gap");
  assert.equal(window.append([]), true);
});

Deno.test("frame window: subscribers at the same seq share one slice until the window changes", () => {
  const window = new FrameWindow(4, 64);
  window.append(entries(1, 2));
  const first = window.after(1)!;
  assert.equal(window.after(1), first, "the same slice for the next subscriber at seq 1");
  assert.notEqual(window.after(0), first);
  const idle = window.after(2)!;
  assert.equal(idle.bytes.length, 0);
  window.append(entries(3, 3));
  const grown = window.after(2)!;
  assert.notEqual(grown, idle, "an append makes a new slice");
  assert.deepEqual(ids(grown.bytes), [3]);
  assert.deepEqual(ids(window.after(1)!.bytes), [2, 3]);
  // A trim moves the window: a slice kept from before it is not handed out again.
  assert.equal(window.after(3)!.bytes.length, 0);
  window.append(entries(4, 9));
  assert.ok(window.count < 9, "trimmed");
  assert.equal(window.after(3), null, "3 is before the window now");
  // A reset too.
  assert.equal(window.after(9)!.bytes.length, 0);
  window.reset(20);
  assert.equal(window.after(9), null, "before the window since the reset");
  assert.equal(window.after(20)!.bytes.length, 0);
});

Deno.test("frame window: bounded in bytes as well as entries; the newest frame always stays", () => {
  const maxBytes = 64 * 1024;
  const window = new FrameWindow(1_000, 4 * 1024, maxBytes);
  // 2 KiB frames: 1,000 entries would be 2 MiB; the window keeps what fits 64 KiB.
  const pad = "x".repeat(2_000);
  for (let seq = 1; seq <= 1_000; seq += 50) {
    assert.equal(window.append(entries(seq, seq + 49, [], pad)), true);
    assert.ok(window.usedBytes <= maxBytes, `${window.usedBytes} bytes of frames`);
    assert.ok(window.byteLength <= 3 * maxBytes, `${window.byteLength} bytes held`);
  }
  assert.equal(window.last, 1_000);
  assert.ok(window.count < 40 && window.count > 20, `${window.count} frames kept`);
  assert.equal(window.after(1), null, "an old resume point reads the store");
  assert.deepEqual(ids(window.after(999)!.bytes), [1_000]);
  // One frame larger than the whole bound is still the newest: it stays, alone.
  window.append(entries(1_001, 1_001, [], "y".repeat(100_000)));
  assert.equal(window.count, 1);
  assert.deepEqual(ids(window.after(1_000)!.bytes), [1_001]);
});

Deno.test("frame window: kept whole answers are bounded in bytes too", () => {
  const maxBytes = 64 * 1024;
  const window = new FrameWindow(1_000, 4 * 1024, maxBytes);
  // Two turns of 10 frames of about 2.5 KiB: 50 KiB of frames, all in the window.
  window.append(entries(1, 20, [10, 20], "x".repeat(2_500)));
  assert.equal(window.count, 20);
  const before = window.byteLength;
  // Four answers of 25, 25, 17.5 and 12.5 KiB would be 80 KiB together.
  for (const after of [0, 10, 3, 5]) assert.ok(window.answer(after, PREFIX));
  const kept = window.byteLength - before;
  assert.ok(kept <= maxBytes, `answers hold ${kept} bytes, at most the bound together`);
  assert.ok(kept > maxBytes / 2, "and several are kept");
});

Deno.test("frame window: a kept answer counts as V8 holds it, an ASCII one at a byte a character", () => {
  const ascii = (from: number, to: number, terminal: number): RunEventEntry[] =>
    entries(from, to, [terminal]).map((entry) =>
      entry.event.type === "message.completed"
        ? { ...entry, event: { ...entry.event, text: `m${entry.seq} ${"x".repeat(400)}` } }
        : entry
    );
  // Room for 8 KiB of kept answers.
  const window = new FrameWindow(100, 1024, 8 * 1024);
  window.append(ascii(1, 12, 12));
  const held = window.byteLength;
  const answer = window.answer(0, PREFIX)!;
  assert.ok(answer.length > 4 * 1024, `${answer.length} characters: more than half the room`);
  // Kept, and counted once per character: at two bytes it would not fit and not be kept.
  assert.equal(window.byteLength - held, answer.length);
  // Text past ASCII counts two bytes a character.
  const wide = new FrameWindow(100, 1024, 64 * 1024);
  wide.append(entries(1, 3, [3]));
  const before = wide.byteLength;
  const body = wide.answer(0, PREFIX)!;
  assert.ok(/[\u0080-\uffff]/.test(body));
  assert.equal(wide.byteLength - before, 2 * body.length);
});
