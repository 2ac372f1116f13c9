// A conversation's events (docs/conversations.md, payloads in docs/contracts.md) folded into
// what the page shows: a list of items (prompts, answers, thoughts, tool calls, questions,
// turn ends, errors) plus the state beside them (plan, mode, queue, usage). It is plain data
// with no DOM, so that 10,000 events cost one pass, and each item carries a `version` that
// grows when it changes: the view re-renders only the items whose version moved.
//
// Events are applied in `seq` order exactly once: `add` drops a seq it has seen, holds one
// that comes before its predecessor, and says when there is a gap to fetch.
//
// A long conversation is opened at its end (the page asks for its last events) and paged
// back: a model may start after any seq, and `with_earlier` puts the page before it in front.

// Kinds that only come while a turn runs: a model that starts inside the conversation learns
// from them that a turn is running when the prompt that began it is before its first event.
const turnKinds = new Set(['agent_message_chunk', 'agent_thought_chunk', 'tool_call', 'tool_call_update',
  'permission_request', 'plan']);

export class ConversationModel {
  // `after`: the seq just before the first event this model will hold (0: from the start).
  constructor(after = 0) {
    this.items = [];
    this.lastSeq = after;
    this.firstSeq = after + 1;
    this.events = [];           // the events applied, in seq order (for with_earlier)
    this.turnKnown = after === 0;
    this.pending = new Map();   // seq → event that arrived before its predecessors
    this.tools = new Map();     // toolCallId → item
    this.questions = new Map(); // toolCallId → the open permission item
    this.queue = new Map();     // promptId → {promptId, text}
    this.plan = null;
    this.mode = null;           // {modeId, model, thinkingLevel}
    this.usage = null;
    this.title = null;
    this.turnRunning = false;
    this.version = 0;           // grows with every applied event
  }

  // Adds events from any source (the catch-up fetch, the events socket), in any order.
  // Returns true when a gap remains: events after lastSeq are missing and must be fetched.
  add(events) {
    for (const event of events) {
      if (!Number.isInteger(event.seq) || event.seq <= this.lastSeq) continue;
      this.pending.set(event.seq, event);
    }
    let next;
    while ((next = this.pending.get(this.lastSeq + 1))) {
      this.pending.delete(next.seq);
      this.lastSeq = next.seq;
      this.events.push(next);
      this.apply(next);
      this.version++;
    }
    return this.pending.size > 0;
  }

  // Whether the conversation has events before the first one this model holds.
  get hasEarlier() { return this.firstSeq > 1; }

  // A new model: `older` (the events just before firstSeq, oldest first, as
  // `GET …/events?before=FIRSTSEQ` returns them) and then everything this one holds. The
  // events are folded again from the first, so that what depends on an earlier event (a
  // tool call's update, an answer's question, a streamed text begun before the page) comes
  // out as it would from the start; one pass over 10,000 events takes milliseconds.
  with_earlier(older) {
    const events = older.filter((event) => Number.isInteger(event.seq) && event.seq < this.firstSeq);
    if (events.length === 0) return this;
    const model = new ConversationModel(events[0].seq - 1);
    model.add(events);
    model.add(this.events);
    model.add([...this.pending.values()]);
    model.keep_items(this.items);
    return model;
  }

  // Where an item came out the same as one of `before` (the model this one replaced), that
  // one takes its place, so the view, which redraws an item whose object changed, redraws
  // only those the earlier page changed.
  keep_items(before) {
    const old = new Map(before.map((item) => [item.key, item]));
    const kept = new Map();
    this.items = this.items.map((item) => {
      const same = old.get(item.key);
      if (!same || !same_fields(same, item)) return item;
      kept.set(item, same);
      return same;
    });
    for (const map of [this.tools, this.questions])
      for (const [id, item] of map) if (kept.has(item)) map.set(id, kept.get(item));
  }

  push(item) {
    item.version = 0;
    item.key = `${item.type}:${item.seq}`;
    this.items.push(item);
    return item;
  }

  touch(item) { item.version++; }

  // The last item when it is a text run of this type that a chunk may extend.
  open_text(type) {
    const last = this.items[this.items.length - 1];
    return last && last.type === type ? last : null;
  }

  apply(event) {
    const p = event.payload || {};
    if (!this.turnKnown && turnKinds.has(event.kind)) { this.turnRunning = true; this.turnKnown = true; }
    switch (event.kind) {
      case 'user_prompt': {
        this.queue.delete(p.promptId);
        this.turnRunning = true;
        this.turnKnown = true;
        this.push({ type: 'prompt', seq: event.seq, at: event.at, promptId: p.promptId,
          text: text_of(p.content), images: Array.isArray(p.images) ? p.images.length : 0 });
        break;
      }
      case 'prompt_queued':
        this.queue.set(p.promptId, { promptId: p.promptId, text: text_of(p.content) });
        break;
      case 'prompt_withdrawn':
        this.queue.delete(p.promptId);
        break;
      case 'agent_message_chunk':
      case 'agent_thought_chunk': {
        const type = event.kind === 'agent_message_chunk' ? 'message' : 'thought';
        const piece = text_of(p.content);
        const open = this.open_text(type);
        if (open) { open.text += piece; append_segment(open.segments, piece); this.touch(open); }
        else this.push({ type, seq: event.seq, at: event.at, text: piece, segments: [piece] });
        break;
      }
      case 'tool_call': {
        const known = this.tools.get(p.toolCallId);
        // A call may come with content of its own (an edit's diff).
        const content = Array.isArray(p.content) ? p.content : null;
        if (known) {
          Object.assign(known, tool_fields(p));
          if (content) known.content = content;
          this.touch(known);
          break;
        }
        const item = this.push({ type: 'tool', seq: event.seq, at: event.at, toolCallId: p.toolCallId,
          status: 'pending', content: content ?? [], ...tool_fields(p) });
        this.tools.set(p.toolCallId, item);
        break;
      }
      case 'tool_call_update': {
        let item = this.tools.get(p.toolCallId);
        if (!item) {
          item = this.push({ type: 'tool', seq: event.seq, at: event.at, toolCallId: p.toolCallId,
            status: 'pending', content: [], title: p.toolCallId });
          this.tools.set(p.toolCallId, item);
        }
        const { content, ...rest } = tool_fields(p);
        Object.assign(item, rest);
        // ACP: content in an update replaces the call's content.
        if (Array.isArray(p.content)) item.content = p.content;
        this.touch(item);
        break;
      }
      case 'permission_request': {
        const item = this.push({ type: 'question', seq: event.seq, at: event.at, toolCallId: p.toolCallId,
          title: p.title || this.tools.get(p.toolCallId)?.title || p.toolCallId,
          rawInput: p.rawInput, options: Array.isArray(p.options) ? p.options : [], open: true, answer: null });
        this.questions.set(p.toolCallId, item);
        break;
      }
      case 'permission_answer': {
        const item = this.questions.get(p.toolCallId);
        if (item) {
          item.open = false;
          item.answer = { kind: p.kind, optionId: p.optionId };
          this.questions.delete(p.toolCallId);
          this.touch(item);
        }
        break;
      }
      case 'plan':
        this.plan = Array.isArray(p.entries) ? p.entries : [];
        break;
      case 'mode_changed':
        this.mode = { ...(this.mode || {}), ...p };
        break;
      case 'result': {
        this.turnRunning = false;
        this.turnKnown = true;
        this.push({ type: 'result', seq: event.seq, at: event.at, stopReason: p.stopReason,
          isError: p.isError === true, costUsd: p.costUsd, numTurns: p.numTurns });
        break;
      }
      case 'error':
        this.push({ type: 'error', seq: event.seq, at: event.at, message: String(p.message ?? '') });
        break;
      case 'session_info':
        if (typeof p.title === 'string') this.title = p.title;
        break;
      case 'usage':
        this.usage = p;
        break;
      default:
        break; // available_commands and kinds of later versions: nothing to show yet
    }
  }
}

// A streamed text is kept in segments as well as whole: the view draws each segment as a
// block of its own, so a chunk changes only the last one and the browser lays out only that
// (one text node of half a megabyte, laid out again every frame, took the page most of its
// time: ui/dev/bench_conversation.mjs). A segment ends after a newline once it is 2 KiB long,
// where a block boundary looks the same as the line break; a text without newlines is cut at
// a space past 8 KiB, or anywhere past 16 KiB.
export const segmentBytes = 2048;
export function append_segment(segments, piece) {
  let last = segments[segments.length - 1] + piece;
  segments[segments.length - 1] = last;
  while (last.length > segmentBytes) {
    let cut = last.lastIndexOf('\n') + 1;
    if (cut <= 0 && last.length > 4 * segmentBytes) cut = last.lastIndexOf(' ') + 1;
    if (cut <= 0 && last.length > 8 * segmentBytes) cut = 8 * segmentBytes;
    if (cut <= 0) break;
    segments[segments.length - 1] = last.slice(0, cut);
    last = last.slice(cut);
    segments.push(last);
  }
}

// The same fields with the same values: strings and numbers equal, arrays element by
// element and objects field by field (one level; the payloads within are the events' own
// objects, shared by both models, so the same object is the same value).
function same_fields(a, b) {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => {
    const x = a[key];
    const y = b[key];
    if (x === y) return true;
    if (Array.isArray(x) && Array.isArray(y)) return x.length === y.length && x.every((v, i) => v === y[i]);
    if (x && y && typeof x === 'object' && typeof y === 'object' && !Array.isArray(x) && !Array.isArray(y)) {
      const inner = Object.keys(x);
      return inner.length === Object.keys(y).length && inner.every((k) => x[k] === y[k]);
    }
    return false;
  });
}

function tool_fields(p) {
  const fields = {};
  for (const name of ['title', 'kind', 'status', 'rawInput', 'rawOutput', 'locations', 'name'])
    if (p[name] !== undefined) fields[name] = p[name];
  return fields;
}

export function text_of(content) {
  if (!content) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map(text_of).join('');
  if (content.type === 'text') return String(content.text ?? '');
  if (content.type === 'content') return text_of(content.content);
  return '';
}
