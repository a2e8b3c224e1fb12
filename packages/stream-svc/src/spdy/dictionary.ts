/**
 * The SPDY/3 header compression dictionary (SPDY Protocol draft 3, section 2.6.10.1): header
 * names and common values, each preceded by its length as a 32-bit big-endian number, then a run of
 * common value fragments without lengths. Both ends prime zlib with it.
 */
const LENGTH_PREFIXED = [
  'options', 'head', 'post', 'put', 'delete', 'trace', 'accept', 'accept-charset',
  'accept-encoding', 'accept-language', 'accept-ranges', 'age', 'allow', 'authorization',
  'cache-control', 'connection', 'content-base', 'content-encoding', 'content-language',
  'content-length', 'content-location', 'content-md5', 'content-range', 'content-type', 'date',
  'etag', 'expect', 'expires', 'from', 'host', 'if-match', 'if-modified-since', 'if-none-match',
  'if-range', 'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'pragma',
  'proxy-authenticate', 'proxy-authorization', 'range', 'referer', 'retry-after', 'server', 'te',
  'trailer', 'transfer-encoding', 'upgrade', 'user-agent', 'vary', 'via', 'warning',
  'www-authenticate', 'method', 'get', 'status', '200 OK', 'version', 'HTTP/1.1', 'url',
  'public', 'set-cookie', 'keep-alive', 'origin',
];

const TRAILING =
  '10010120120220520630030230330430530630740240540640740840941041141241341441541641750250450520' +
  '3 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unautho' +
  'rized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unava' +
  'ilableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat' +
  ', Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+' +
  'xml,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=is' +
  'o-8859-1,utf-,*,enq=0.';

function build(): Buffer {
  const parts: Buffer[] = [];
  for (const word of LENGTH_PREFIXED) {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(word.length);
    parts.push(length, Buffer.from(word, 'latin1'));
  }
  parts.push(Buffer.from(TRAILING, 'latin1'));
  return Buffer.concat(parts);
}

export const SPDY3_DICTIONARY: Buffer = build();
