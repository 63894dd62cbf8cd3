/** Control-plane records of the data side: projects, sources, ingest keys, collections. */

export interface ProjectRecord {
  id: string;
  team_id: string;
  name: string;
  start_at: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  late_data_window_minutes: number;
  queued_server_count: number | null;
}
