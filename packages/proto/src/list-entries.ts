/**
 * Encoding of list responses whose only field is `repeated Item <field> = 1` (ListContainers,
 * ListPodSandbox). Such a response is, on the wire, the concatenation of one entry per item:
 * tag (field 1, wire type 2), varint length, the item's bytes. An entry is exactly what the
 * ordinary serializer produces for a response holding that one item, so an item encoded once can
 * be copied into every later response that lists it unchanged.
 */
export class ListResponseEncoder<Response extends object, Item extends object> {
  /** The entry bytes of each sealed item, by the (frozen) item object. */
  private readonly entries = new WeakMap<object, Buffer>();

  constructor(
    private readonly field: keyof Response & string,
    private readonly serializeOrdinary: (response: Response) => Buffer,
  ) {}

  /**
   * A deep-frozen copy of `item`, encoded now. Responses listing this very object copy its bytes
   * instead of encoding it again; being frozen, it cannot change after its bytes were taken.
   */
  readonly seal = (item: Item): Item => {
    const sealed = deepFreeze(structuredClone(item));
    this.entries.set(sealed, this.encodeEntry(sealed));
    return sealed;
  };

  /** The response serializer: sealed items are copied, any other item is encoded as usual. */
  readonly serialize = (response: Response): Buffer => {
    const items: unknown = response[this.field];
    if (!Array.isArray(items)) return this.serializeOrdinary(response);
    const parts = new Array<Buffer>(items.length);
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as Item;
      parts[i] = this.entries.get(item) ?? this.encodeEntry(item);
    }
    return Buffer.concat(parts);
  };

  private encodeEntry(item: Item): Buffer {
    return this.serializeOrdinary({ [this.field]: [item] } as unknown as Response);
  }
}

function deepFreeze<T>(value: T): T {
  // Byte arrays cannot be frozen; the list items this serves have no bytes fields.
  if (typeof value === 'object' && value !== null && !ArrayBuffer.isView(value) && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
