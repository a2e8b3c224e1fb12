export { formatRecords, formatTimestamp, parseCriLine, parseCriLog, parseRfc3339Nano, reassembleStreams, MAX_RECORD_CONTENT, CriParseError, type CriRecord, type StreamName } from '@skiff/common/core';
export { ExportParser, encodeExportEntry, type JournalFields } from './journal-export.js';
export type { EngineStatus } from './log-engine.js';
