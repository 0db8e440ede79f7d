/**
 * agent-memory's HTTP API (`memory serve`) for TypeScript and JavaScript agents.
 *
 * Every type comes from the service's OpenAPI schema (`openapi.json`, generated into
 * `schema.d.ts` by openapi-typescript); requests go through openapi-fetch. `MemoryClient`
 * names the calls an agent makes on every turn; `client.api` is the typed client for
 * every route.
 *
 *     const memory = new MemoryClient({ baseUrl: "http://127.0.0.1:8765", apiKey: process.env.MEMORY_API_KEY! });
 *     const { text } = await memory.inject("When is my WRX oil change due?");
 */
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, paths } from "./schema.js";

type Schemas = components["schemas"];
export type Injected = Schemas["Injected"];
export type Line = Schemas["Line"];
export type Found = Schemas["Found"];
export type Memory = Schemas["Memory"];
export type History = Schemas["History"];
export type Changed = Schemas["Changed"];
export type Used = Schemas["Used"];
export type TurnSaved = Schemas["TurnSaved"];
export type Turn = Schemas["Turn"];
export type Flushed = Schemas["Flushed"];
export type Imported = Schemas["Imported"];
export type KeyInfo = Schemas["KeyInfo"];
export type Message = Schemas["Message"];
export type InjectOptions = Omit<Schemas["InjectBody"], "context">;
export type SearchOptions = Omit<Schemas["SearchBody"], "query">;
export type ListOptions = NonNullable<paths["/v1/items"]["get"]["parameters"]["query"]>;
export type TurnRecord = Omit<Schemas["TurnBody"], "turn">;
export type FlushOptions = Schemas["FlushBody"];
export type Action = "forget" | "pin" | "unpin" | "reinforce" | "demote";

export interface MemoryClientOptions {
  /** Where `memory serve` listens, e.g. `http://127.0.0.1:8765`. */
  baseUrl: string;
  /** An API key from `memory keys create` (sent as `Authorization: Bearer …`). */
  apiKey: string;
  /** Read a namespace the key was granted instead of its own (writes always go to its own). */
  namespace?: string;
  /** Give up on a request after this long (default 10 s). */
  timeoutMs?: number;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof globalThis.fetch;
}

/** A refusal or failure of the service: its status (0: no answer at all) and its reason. */
export class MemoryError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    readonly route: string,
    readonly retryAfter?: number,
  ) {
    super(`${route}: ${status} ${reason}`);
    this.name = "MemoryError";
  }
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

function reasonOf(error: unknown, response: Response): string {
  if (error && typeof error === "object") {
    const body = error as { error?: unknown; detail?: unknown };
    if (typeof body.error === "string") return body.error;
    if (body.detail !== undefined) return JSON.stringify(body.detail);
  }
  if (typeof error === "string" && error) return error;
  return response.statusText || "no reason given";
}

export class MemoryClient {
  /** The typed client for every route of the schema (openapi-fetch). */
  readonly api: Client<paths>;
  private readonly namespace: string | undefined;

  constructor(options: MemoryClientOptions) {
    const timeoutMs = options.timeoutMs ?? 10_000;
    const base = options.fetch ?? globalThis.fetch;
    this.namespace = options.namespace;
    this.api = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
      headers: { Authorization: `Bearer ${options.apiKey}` },
      fetch: (request: Request) => base(request, { signal: AbortSignal.timeout(timeoutMs) }),
    });
  }

  private async answer<T>(route: string, call: Promise<Answer<T>>): Promise<T> {
    let answered: Answer<T>;
    try {
      answered = await call;
    } catch (cause) {  // no answer at all: refused connection, DNS, the timeout
      const why = cause instanceof Error ? `${cause.message}${cause.cause ? ` (${String(cause.cause)})` : ""}` : String(cause);
      throw new MemoryError(0, `no answer from the service: ${why}`, route);
    }
    const { data, error, response } = answered;
    if (error !== undefined || !response.ok) {
      const retry = response.headers.get("retry-after");
      throw new MemoryError(response.status, reasonOf(error, response), route, retry ? Number(retry) : undefined);
    }
    return data as T;
  }

  private get reading() {
    return { query: { namespace: this.namespace } };
  }

  /** The memory block for the agent's next prompt: put `text` into the context. */
  inject(context: string | Message[], options: InjectOptions = {}): Promise<Injected> {
    return this.answer("POST /v1/inject", this.api.POST("/v1/inject", { params: this.reading, body: { context, ...options } }));
  }

  /** The best memories for a query, best first. */
  search(query: string, options: SearchOptions = {}): Promise<Found[]> {
    return this.answer("POST /v1/search", this.api.POST("/v1/search", { params: this.reading, body: { query, ...options } }));
  }

  /** Store a memory now: found at once (`[pending]`), published by the next pipeline run. */
  remember(content: string, project?: string): Promise<Memory> {
    return this.answer("POST /v1/remember", this.api.POST("/v1/remember", { body: { content, project } }));
  }

  /** One memory by id, short id (`m:4821`) or pending id (`p:482193`). */
  get(id: string): Promise<Memory> {
    return this.answer("GET /v1/items/{item_id}",
      this.api.GET("/v1/items/{item_id}", { params: { path: { item_id: id }, ...this.reading } }));
  }

  /** Memories matching every filter given, newest first. */
  list(filters: Omit<ListOptions, "namespace"> = {}): Promise<Memory[]> {
    return this.answer("GET /v1/items",
      this.api.GET("/v1/items", { params: { query: { ...filters, namespace: this.namespace } } }));
  }

  /** Where a memory came from: its source turns, related memories and feedback. */
  history(id: string): Promise<History> {
    return this.answer("GET /v1/items/{item_id}/history",
      this.api.GET("/v1/items/{item_id}/history", { params: { path: { item_id: id }, ...this.reading } }));
  }

  /** Replace a memory's wording (the user's words win). */
  update(id: string, content: string, tags?: string[]): Promise<Changed> {
    return this.answer("PATCH /v1/items/{item_id}",
      this.api.PATCH("/v1/items/{item_id}", { params: { path: { item_id: id } }, body: { content, tags } }));
  }

  /** Feedback on a memory: forget, pin, unpin, reinforce or demote. */
  act(action: Action, id: string): Promise<Changed> {
    return this.answer(`POST /v1/items/{item_id}/${action}`,
      this.api.POST("/v1/items/{item_id}/{action}", { params: { path: { item_id: id, action } } }));
  }

  forget(id: string): Promise<Changed> {
    return this.act("forget", id);
  }

  pin(id: string): Promise<Changed> {
    return this.act("pin", id);
  }

  /** Which of the block's memories the agent's reply used (ids or short ids). */
  recordResponse(itemIds: string[], responseText: string, sessionId?: string): Promise<Used> {
    return this.answer("POST /v1/responses", this.api.POST("/v1/responses", {
      body: { item_ids: itemIds, response_text: responseText, session_id: sessionId },
    }));
  }

  /** Checkpoint one turn of a live session; durable when this resolves. */
  appendTurn(sessionId: string, turn: number, record: TurnRecord): Promise<TurnSaved> {
    return this.answer("POST /v1/sessions/{session_id}/turns", this.api.POST("/v1/sessions/{session_id}/turns", {
      params: { path: { session_id: sessionId } }, body: { turn, ...record },
    }));
  }

  /** The session's checkpointed turns, in order. */
  replay(sessionId: string, uptoTurn?: number): Promise<Turn[]> {
    return this.answer("GET /v1/sessions/{session_id}/turns", this.api.GET("/v1/sessions/{session_id}/turns", {
      params: { path: { session_id: sessionId }, query: { upto_turn: uptoTurn } },
    }));
  }

  /** Hand a session to the pipeline: its transcript, or its checkpointed turns. */
  flushSession(sessionId: string, options: FlushOptions = {}): Promise<Flushed> {
    return this.answer("POST /v1/sessions/{session_id}/flush", this.api.POST("/v1/sessions/{session_id}/flush", {
      params: { path: { session_id: sessionId } }, body: options,
    }));
  }

  /** Lessons learned from corrections, to load at the start of a session. */
  lessons(project?: string): Promise<string[]> {
    return this.answer("GET /v1/lessons", this.api.GET("/v1/lessons", {
      params: { query: { namespace: this.namespace, project } },
    }));
  }

  /** The calling key: its agent, namespace and grants. */
  whoami(): Promise<KeyInfo> {
    return this.answer("GET /v1/whoami", this.api.GET("/v1/whoami", { params: this.reading }));
  }

  /** The namespace's published memory as JSON Lines (the export format, header first). */
  async exportJsonl(): Promise<string> {
    return this.answer("GET /v1/export", this.api.GET("/v1/export", { params: this.reading, parseAs: "text" }));
  }
}
