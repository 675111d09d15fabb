/**
 * The real QashioClient in front of a FakeProvider, for engine tests of what only the client does: retries,
 * `Retry-After`, call deadlines and the error envelope. Shares the rig's clock, so client waits move it.
 */
import { PATHS, QashioClient } from "../../shared/qashio/client.js";
import { StaticTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import type { FetchInit, FetchResponse } from "../../shared/qashio/http.js";
import type { Clock } from "../../shared/bridge/ports.js";
import type { ProviderPage } from "../../shared/bridge/provider.js";
import type { FakeProvider, ProviderCall } from "./fakes.js";

/** An error answer the provider gives in place of a call's real one. */
export interface FaultAnswer {
  readonly status: number;
  readonly retryAfterSeconds?: number;
  readonly message?: string;
  readonly errors?: readonly { readonly field: string | null; readonly code: string; readonly message: string }[];
}

function answer(status: number, body: unknown, headers: Record<string, string> = {}): FetchResponse {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

function failure(fault: FaultAnswer): FetchResponse {
  const headers: Record<string, string> = fault.retryAfterSeconds === undefined ? {} : { "retry-after": String(fault.retryAfterSeconds) };
  return answer(fault.status, { status_code: fault.status, message: fault.message ?? `failure ${fault.status}`, errors: fault.errors ?? [] }, headers);
}

/**
 * A list item served as this JSON text, verbatim: for bodies JSON.stringify cannot produce (a member nested 20,000
 * levels deep, which JSON.parse takes). Put it in `FakeProvider.rawOverrides` of a provider behind {@link clientOverFake}.
 */
export class RawJsonText {
  constructor(readonly text: string) {}
}

function listed(page: ProviderPage): FetchResponse {
  const pagination = { has_previous: (page.pagination?.page ?? 1) > 1, ...page.pagination };
  const items = page.data.map((item) => (item instanceof RawJsonText ? item.text : JSON.stringify(item)));
  const envelope = JSON.stringify({ status_code: 200, success: true, message: "ok", data: [], pagination });
  const body = envelope.replace('"data":[]', `"data":[${items.join(",")}]`);
  return new Response(body, { status: 200, headers: { "content-type": "application/json" } });
}

/** Runs a FakeProvider call; an error it throws (a page size it refuses, say) becomes the provider's error answer. */
async function serve(run: () => Promise<FetchResponse>): Promise<FetchResponse> {
  try {
    return await run();
  } catch (err) {
    const { status, message, errors } = err as { status?: number; message: string; errors?: FaultAnswer["errors"] };
    return failure({ status: status ?? 500, message, errors });
  }
}

/**
 * A QashioClient whose requests the FakeProvider answers. `fault` may answer a call in its place (it is consulted
 * before the fake sees the call, on every attempt, retries included).
 *
 * @example
 * ```ts
 * const rig = makeRig();
 * const client = clientOverFake(rig.provider, rig.clock, (call) => (call.op === "acknowledgeTransactions" ? { status: 503 } : undefined));
 * await pollTransactions({ ...rig.deps, provider: client });
 * ```
 */
export function clientOverFake(provider: FakeProvider, clock: Clock, fault: (call: ProviderCall) => FaultAnswer | undefined = () => undefined): QashioClient {
  const fetch = async (input: string, init: FetchInit): Promise<FetchResponse> => {
    const url = new URL(input);
    const q = url.searchParams;
    const int = (name: string): number => Number(q.get(name) ?? "0");
    let call: ProviderCall;
    if (url.pathname === PATHS.acknowledge) {
      call = { op: "acknowledgeTransactions", ids: (JSON.parse(init.body ?? "{}") as { transaction_ids: string[] }).transaction_ids };
    } else if (url.pathname === PATHS.transactions) {
      const status = q.get("client_sync_status") as "not_synced" | "outdated" | null;
      const qashioId = q.get("qashio_id");
      call = {
        op: "listTransactions",
        query: { ...(status ? { client_sync_status: status } : {}), ...(qashioId ? { qashio_id: qashioId } : {}), page: int("page"), page_size: int("page_size") },
      };
    } else if (url.pathname === PATHS.erpCards) {
      call = { op: "listErpCards", query: { ...(q.get("status") ? { status: "suspended" as const } : {}), page: int("page"), page_size: int("page_size") } };
    } else if (url.pathname.startsWith(`${PATHS.erpCards}/`)) {
      call = { op: "readErpCard", id: decodeURIComponent(url.pathname.slice(PATHS.erpCards.length + 1)) };
    } else {
      return failure({ status: 404 });
    }
    const faulty = fault(call);
    if (faulty) return failure(faulty);
    if (call.op === "acknowledgeTransactions") {
      const ids = [...call.ids];
      return serve(async () => (await provider.acknowledgeTransactions(ids), answer(200, { status_code: 200, success: true, message: "ok", data: {} })));
    }
    if (call.op === "listTransactions") {
      const query = call.query;
      return serve(async () => listed(await provider.listTransactions(query)));
    }
    if (call.op === "readErpCard") {
      const id = call.id;
      return serve(async () => answer(200, { status_code: 200, success: true, message: "ok", data: (await provider.readErpCard(id)).data[0] }));
    }
    const query = call.query;
    return serve(async () => listed(await provider.listErpCards(query)));
  };
  return new QashioClient({ baseUrl: "https://provider.example.test", tokenProvider: new StaticTokenProvider("token"), fetch, clock, retry: { random: () => 0.5 } });
}
