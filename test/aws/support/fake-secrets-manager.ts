/**
 * A stateful in-memory Secrets Manager for one client instance, wired through aws-sdk-client-mock: versions with
 * staging labels, ClientRequestToken idempotency, and scripted throttling.
 */
import { randomUUID } from "node:crypto";
import {
  DescribeSecretCommand,
  GetSecretValueCommand,
  ListSecretVersionIdsCommand,
  PutSecretValueCommand,
  SecretsManagerClient,
  UpdateSecretVersionStageCommand,
} from "@aws-sdk/client-secrets-manager";
import { mockClient } from "aws-sdk-client-mock";

interface Version {
  readonly id: string;
  /** Undefined for the empty version Secrets Manager labels AWSPENDING when a rotation starts. */
  value: string | undefined;
  stages: Set<string>;
  /** When the version was created, as ListSecretVersionIds reports it. */
  readonly created: Date;
}

type Operation = "GetSecretValue" | "PutSecretValue" | "DescribeSecret" | "UpdateSecretVersionStage" | "ListSecretVersionIds";

/** A provider secret for tests: the fields the runtime reads, with a salt long enough for `hash` mode. */
export const PROVIDER_SECRET = { client_id: "cid", client_secret: "csecret", refresh_token: "rt-1", pii_salt: "salt-0123456789abcdef" };

/** An AWS-style error (name + $metadata), as the SDK raises them. */
export function awsError(name: string, status = 400, retryable = false): Error {
  const error = new Error(`${name} (fake)`) as Error & { $metadata: object; $fault: string; $retryable?: object };
  error.name = name;
  error.$metadata = { httpStatusCode: status, requestId: randomUUID() };
  error.$fault = status >= 500 ? "server" : "client";
  if (retryable) error.$retryable = { throttling: status === 429 || name.includes("Throttl") };
  return error;
}

export class FakeSecretsManager {
  readonly client = new SecretsManagerClient({ region: "eu-west-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } });
  readonly versions: Version[] = [];
  readonly calls: { operation: Operation; input: Record<string, unknown> }[] = [];
  /** The secret's tags, as DescribeSecret returns them. */
  tags: Record<string, string> = {};
  readonly #failures: { operation: Operation; error: Error }[] = [];
  readonly #holds: { operation: Operation; answered: boolean; reach(): void; until: Promise<void> }[] = [];

  /** `now`: the time versions are created at (settable later, as a test's clock moves). */
  constructor(
    readonly secretId: string,
    initial: Record<string, unknown>,
    public now: () => number = Date.now,
  ) {
    this.versions.push({ id: randomUUID(), value: JSON.stringify(initial), stages: new Set(["AWSCURRENT"]), created: new Date(this.now()) });
    const mock = mockClient(this.client);
    mock.on(GetSecretValueCommand).callsFake((input) => this.#run("GetSecretValue", input, () => this.#get(input)));
    mock.on(PutSecretValueCommand).callsFake((input) => this.#run("PutSecretValue", input, () => this.#put(input)));
    mock.on(DescribeSecretCommand).callsFake((input) => this.#run("DescribeSecret", input, () => this.#describe()));
    mock.on(UpdateSecretVersionStageCommand).callsFake((input) => this.#run("UpdateSecretVersionStage", input, () => this.#updateStage(input)));
    mock.on(ListSecretVersionIdsCommand).callsFake((input) => this.#run("ListSecretVersionIds", input, () => this.#listVersions(input)));
  }

  /** Makes the next call of `operation` fail with `error` (queue several for several failures). */
  failNext(operation: Operation, error: Error, times = 1): void {
    for (let i = 0; i < times; i += 1) this.#failures.push({ operation, error });
  }

  /**
   * Makes the next call of `operation` wait until `release()` (a slow call); `reached` resolves when the call arrives.
   * `answered`: the call is answered as it arrives, its answer delivered at `release()` (an answer on its way back),
   * instead of answered at `release()`.
   */
  holdNext(operation: Operation, { answered = false } = {}): { reached: Promise<void>; release(): void } {
    let reach!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((resolve) => (reach = resolve));
    this.#holds.push({ operation, answered, reach, until: new Promise((resolve) => (release = resolve)) });
    return { reached, release };
  }

  /** What RotateSecret does before invoking the rotation function: an empty version labelled AWSPENDING. */
  startRotation(token: string): void {
    const version: Version = { id: token, value: undefined, stages: new Set(), created: new Date(this.now()) };
    this.versions.push(version);
    this.#moveStage("AWSPENDING", version);
  }

  /** The parsed JSON of the AWSCURRENT version. */
  current(): Record<string, unknown> {
    return JSON.parse(this.#byStage("AWSCURRENT").value ?? "null") as Record<string, unknown>;
  }

  stagesOf(versionId: string): string[] {
    return [...(this.versions.find((v) => v.id === versionId)?.stages ?? [])].sort();
  }

  /** Number of versions holding a value. */
  get versionCount(): number {
    return this.versions.filter((v) => v.value !== undefined).length;
  }

  /** Id of the version labelled `stage`, if any. */
  versionWith(stage: string): string | undefined {
    return this.versions.find((v) => v.stages.has(stage))?.id;
  }

  async #run<T>(operation: Operation, input: Record<string, unknown>, body: () => T): Promise<T> {
    this.calls.push({ operation, input });
    const held = this.#holds.findIndex((h) => h.operation === operation);
    const hold = held >= 0 ? this.#holds.splice(held, 1)[0] : undefined;
    hold?.reach();
    if (hold?.answered !== true) {
      await hold?.until;
      return this.#answer(operation, body);
    }
    const answer = (async () => this.#answer(operation, body))();
    // A failure is delivered at release: not an unhandled rejection meanwhile.
    answer.catch(() => undefined);
    await hold.until;
    return answer;
  }

  /** The answer to a call of `operation` now: its scripted failure, if any, else `body`'s. */
  #answer<T>(operation: Operation, body: () => T): T {
    const index = this.#failures.findIndex((f) => f.operation === operation);
    if (index >= 0) {
      const [failure] = this.#failures.splice(index, 1);
      throw failure?.error;
    }
    return body();
  }

  #byStage(stage: string): Version {
    const version = this.versions.find((v) => v.stages.has(stage));
    if (version === undefined) throw awsError("ResourceNotFoundException");
    return version;
  }

  #get(input: { VersionId?: string; VersionStage?: string }) {
    const version =
      input.VersionId !== undefined ? this.versions.find((v) => v.id === input.VersionId) : this.#byStage(input.VersionStage ?? "AWSCURRENT");
    if (version?.value === undefined) throw awsError("ResourceNotFoundException");
    return { ARN: this.secretId, VersionId: version.id, SecretString: version.value, VersionStages: [...version.stages] };
  }

  #put(input: { ClientRequestToken?: string; SecretString?: string; VersionStages?: string[] }) {
    const id = input.ClientRequestToken ?? randomUUID();
    const existing = this.versions.find((v) => v.id === id);
    if (existing !== undefined) {
      if (existing.value !== undefined && existing.value !== input.SecretString) throw awsError("ResourceExistsException");
      if (existing.value === undefined) {
        existing.value = input.SecretString ?? "";
        for (const stage of input.VersionStages ?? ["AWSCURRENT"]) this.#moveStage(stage, existing);
      }
      return { ARN: this.secretId, VersionId: id, VersionStages: [...existing.stages] };
    }
    const stages = input.VersionStages ?? ["AWSCURRENT"];
    const version: Version = { id, value: input.SecretString ?? "", stages: new Set(), created: new Date(this.now()) };
    this.versions.push(version);
    for (const stage of stages) this.#moveStage(stage, version);
    return { ARN: this.secretId, VersionId: id, VersionStages: [...version.stages] };
  }

  #moveStage(stage: string, to: Version): void {
    const from = this.versions.find((v) => v.stages.has(stage));
    if (from === to) return;
    from?.stages.delete(stage);
    if (stage === "AWSCURRENT" && from !== undefined) {
      for (const v of this.versions) v.stages.delete("AWSPREVIOUS");
      from.stages.add("AWSPREVIOUS");
    }
    to.stages.add(stage);
  }

  /** Pages of `MaxResults` (Secrets Manager's default and maximum is 100), every version (deprecated ones too). */
  #listVersions(input: { MaxResults?: number; NextToken?: string }) {
    const from = Number(input.NextToken ?? "0");
    const size = Math.min(input.MaxResults ?? 100, 100);
    const page = this.versions.slice(from, from + size);
    const next = from + size < this.versions.length ? String(from + size) : undefined;
    return {
      ARN: this.secretId,
      Versions: page.map((v) => ({ VersionId: v.id, VersionStages: [...v.stages], CreatedDate: v.created })),
      ...(next !== undefined ? { NextToken: next } : {}),
    };
  }

  #describe() {
    return {
      ARN: this.secretId,
      Tags: Object.entries(this.tags).map(([Key, Value]) => ({ Key, Value })),
      VersionIdsToStages: Object.fromEntries(this.versions.filter((v) => v.stages.size > 0).map((v) => [v.id, [...v.stages]])),
    };
  }

  #updateStage(input: { VersionStage?: string; MoveToVersionId?: string; RemoveFromVersionId?: string }) {
    const stage = input.VersionStage ?? "";
    if (input.RemoveFromVersionId !== undefined) {
      const from = this.versions.find((v) => v.id === input.RemoveFromVersionId);
      if (from === undefined || !from.stages.has(stage)) throw awsError("InvalidParameterException");
      if (input.MoveToVersionId === undefined) from.stages.delete(stage);
    }
    if (input.MoveToVersionId !== undefined) {
      const to = this.versions.find((v) => v.id === input.MoveToVersionId);
      if (to === undefined) throw awsError("ResourceNotFoundException");
      this.#moveStage(stage, to);
    }
    return { ARN: this.secretId, Name: this.secretId };
  }
}
