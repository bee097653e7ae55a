/**
 * GitLab (https://docs.gitlab.com/user/project/integrations/webhooks/, "Create a webhook" and "Delivery headers"). GitLab
 * signs nothing: the webhook's secret token is sent as `X-Gitlab-Token`, compared here in constant time with each
 * configured secret. It tells GitLab from an impostor, but it authenticates neither the body nor the other headers.
 *
 * - `Idempotency-Key` (GitLab 17.4 and later) is "consistent across webhook retries", and Resend Request keeps it: the
 *   delivery ID.
 * - `X-Gitlab-Event-UUID` is one per event, shared by every hook the event sets off — and also by "recursive webhooks
 *   (triggered by earlier webhooks)", which are other events. So the event ID is that UUID and the first 32 hex digits
 *   of the body's SHA-256: a project's hook and its group's deliver one event with one body under one ID, while a
 *   change a receiver made in answer is a new event.
 * - `X-Gitlab-Webhook-UUID` is new on every request, so it names nothing a retry repeats; it stays in the stored headers.
 * - The topic is the body's `object_kind` (`push`, `merge_request`), a system hook's `event_name`, else `X-Gitlab-Event`.
 *
 * Without an Idempotency-Key (before 17.4) the event ID names the delivery too. GitLab's payloads share no field
 * saying when the event happened, so none is taken. GitLab.com waits 10 seconds
 * (https://docs.gitlab.com/user/gitlab_com/, "Other limits").
 */
import { randomUUID } from 'node:crypto';
import { InputError, SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { parseJson } from './body.ts';
import { optionalString, requireId } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { requireSignatureHeader, sha256Hex, tokenMatches } from './signature.ts';

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    ackTimeoutMs: 10_000,
    signatureHeaders: ['x-gitlab-token'],
    verify(request) {
      const { headers } = request;
      const token = requireSignatureHeader(headers, 'X-Gitlab-Token');
      if (!tokenMatches(token, secrets)) {
        throw new SignatureError("X-Gitlab-Token is none of the configured secrets (the webhook's Secret token)");
      }
      const idempotencyKey = headers.get('idempotency-key')?.trim() || null;
      const eventUuid = headers.get('x-gitlab-event-uuid')?.trim() || null;
      if (idempotencyKey === null && eventUuid === null) {
        throw new InputError('missing_identity', 'the request verified but has neither an Idempotency-Key nor an X-Gitlab-Event-UUID header');
      }
      const eventId =
        eventUuid === null
          ? requireId(idempotencyKey, 'Idempotency-Key header')
          : requireId(`${eventUuid}:${sha256Hex(request.body).slice(0, 32)}`, 'event id (X-Gitlab-Event-UUID : body hash)');
      const json = parseJson(request.body);
      return {
        deliveryId: idempotencyKey === null ? eventId : requireId(idempotencyKey, 'Idempotency-Key header'),
        eventId,
        topic:
          optionalString(jsonPointer(json, '/object_kind')) ??
          optionalString(jsonPointer(json, '/event_name')) ??
          optionalString(headers.get('x-gitlab-event')),
        occurredAt: null,
        json,
      };
    },
  };
}

function sample({ asked, deliveryId, secret }: SampleRequest): Sample {
  const body = JSON.stringify({ object_kind: asked.topic ?? 'push', ref: 'refs/heads/main', project: { id: 1 } });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-gitlab-token': secret,
      'x-gitlab-event': 'Push Hook',
      'x-gitlab-event-uuid': asked.eventId ?? randomUUID(),
      'idempotency-key': deliveryId,
    },
  };
}

export const gitlab = sender({ name: 'gitlab', adapter, sample });
