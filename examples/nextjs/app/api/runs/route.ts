import { record } from '#lib/runs';

// For the example's test only: what the webhook handler did, read live at every request.
export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export function GET(): Response {
  return Response.json(record);
}
