import { execFileSync } from 'node:child_process'
import {
  closeSync,
  mkdtempSync,
  openSync,
  readlinkSync,
  rmdirSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { basename } from 'node:path'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A file system of its own, `sizeMb` big, so a test can fill it for real: a tmpfs mounted on a
 * fresh directory. Needs root (CI runs as root); without it the test fails, it never skips.
 */
export interface SmallDisk {
  dir: string
  /** Writes `filler` until the file system is full (ENOSPC); returns the bytes written. */
  fill(name?: string): number
  /** Deletes the filler: the space comes back. */
  free(name?: string): void
  /** Unmounts and removes the directory (also after a failed test). */
  remove(): void
}

export function mountSmallDisk(sizeMb: number, owner?: string): SmallDisk {
  const dir = mkdtempSync(join(tmpdir(), 'campusgate-disk-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0700`, 'tmpfs', dir], {
      stdio: 'pipe',
    })
  } catch (error) {
    rmdirSync(dir)
    throw new Error(
      `cannot mount a ${sizeMb} MiB tmpfs on ${dir} (these tests need root): ${String(error)}`,
    )
  }
  if (owner !== undefined) execFileSync('chown', [owner, dir])
  let mounted = true
  return {
    dir,
    fill(name = 'filler') {
      const fd = openSync(join(dir, name), 'a')
      const chunk = Buffer.alloc(64 * 1024, 0x5a)
      let written = 0
      try {
        for (;;) written += writeSync(fd, chunk)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error
        // The last pages, byte by byte chunks, so not even a small page is left.
        const small = Buffer.alloc(512, 0x5a)
        for (;;) {
          try {
            written += writeSync(fd, small)
          } catch {
            break
          }
        }
      } finally {
        closeSync(fd)
      }
      return written
    },
    free(name = 'filler') {
      rmSync(join(dir, name), { force: true })
    },
    remove() {
      if (!mounted) return
      mounted = false
      try {
        execFileSync('umount', [dir], { stdio: 'pipe' })
      } catch {
        // Still busy (an open file): detach it, so nothing is left mounted.
        execFileSync('umount', ['-l', dir], { stdio: 'pipe' })
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * An ext4 file system on a loop device, mounted `errors=remount-ro`, that a test can make turn
 * read-only under the service as the kernel does after a storage error (ext4's own
 * `trigger_fs_error`). It stays read-only until unmounted and checked, as a real one does.
 */
export interface BreakableDisk {
  dir: string
  /** Reports an ext4 error: the kernel remounts the file system read-only. */
  turnReadOnly(): void
  remove(): void
}

export function mountBreakableDisk(sizeMb: number): BreakableDisk {
  const work = mkdtempSync(join(tmpdir(), 'campusgate-ext4-'))
  const image = join(work, 'disk.img')
  const dir = join(work, 'mnt')
  let mounted = false
  try {
    execFileSync('truncate', ['-s', `${sizeMb}M`, image])
    execFileSync('mkfs.ext4', ['-q', '-F', image], { stdio: 'pipe' })
    execFileSync('mkdir', [dir])
    execFileSync('mount', ['-o', 'loop,errors=remount-ro', image, dir], { stdio: 'pipe' })
    mounted = true
  } catch (error) {
    rmSync(work, { recursive: true, force: true })
    throw new Error(
      `cannot mount an ext4 image on a loop device (these tests need root): ${String(error)}`,
    )
  }
  const device = execFileSync('findmnt', ['-n', '-o', 'SOURCE', dir], { encoding: 'utf8' }).trim()
  return {
    dir,
    turnReadOnly() {
      const name = basename(device.startsWith('/dev/') ? readlinkOr(device) : device)
      writeFileSync(`/sys/fs/ext4/${name}/trigger_fs_error`, 'campusgate storage-fault test')
    },
    remove() {
      if (mounted) {
        mounted = false
        try {
          execFileSync('umount', [dir], { stdio: 'pipe' })
        } catch {
          execFileSync('umount', ['-l', dir], { stdio: 'pipe' })
        }
      }
      rmSync(work, { recursive: true, force: true })
    },
  }
}

function readlinkOr(path: string): string {
  try {
    return readlinkSync(path)
  } catch {
    return path
  }
}
