// CRI ImageService.ImageFsInfo
import { nowNanos } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { ImageStore } from '@skiff/image-store';

export async function imageFsInfoCall(store: ImageStore): Promise<cri.ImageFsInfoResponse> {
  const info = await store.fsInfo();
  const usage: cri.FilesystemUsage = {
    timestamp: nowNanos(),
    fs_id: { mountpoint: info.mountpoint },
    used_bytes: { value: String(info.usedBytes) },
    inodes_used: { value: String(info.inodesUsed) },
  };
  return { image_filesystems: [usage], container_filesystems: [] };
}
